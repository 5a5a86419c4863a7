import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { csvHeader, csvLine, ledgerLine } from './ledger.js';

/**
 * The files of one export: the part each step writes, the temp file the parts are joined in, and
 * the export itself. Every write here can be repeated (each file is written whole, under a name
 * of its own): a step run again after a crash inside it rewrites the same bytes.
 */
export interface ExportFiles {
  file: string;
  format: 'csv' | 'json';
  /** How many parts the export is cut into (one step each). */
  parts: number;
}

/** The file of part `index` (a `.partial` until the export is published). */
export function partFile(files: ExportFiles, index: number): string {
  return `${files.file}.${index + 1}.partial`;
}

/** The rows part `index` of `rows` holds: [from, to). */
export function partRows(files: ExportFiles, rows: number, index: number): { from: number; to: number } {
  return { from: Math.floor((rows * index) / files.parts), to: Math.floor((rows * (index + 1)) / files.parts) };
}

/** Writes part `index` whole; the first carries the header. */
export async function writePart(files: ExportFiles, tenant: string, month: string, rows: number, index: number, signal: AbortSignal): Promise<void> {
  const { from, to } = partRows(files, rows, index);
  let text = index === 0 ? (files.format === 'csv' ? csvHeader() : '[') : '';
  for (let i = from; i < to; i++) {
    const line = ledgerLine(tenant, month, i);
    text += files.format === 'csv' ? csvLine(line) : `${i === 0 ? '' : ','}\n${JSON.stringify(line)}`;
  }
  await writeFile(partFile(files, index), text, { signal });
}

/**
 * Joins the parts into the temp file, makes it the export with one rename, then removes the
 * parts; returns the export's SHA-256. Run again after it got as far as the rename (the parts
 * are gone, the export is there), it only reads the export back.
 */
export async function publishExport(files: ExportFiles): Promise<string> {
  const parts = Array.from({ length: files.parts }, (_, i) => partFile(files, i));
  if (!parts.every((p) => existsSync(p)) && existsSync(files.file)) return createHash('sha256').update(await readFile(files.file)).digest('hex');
  const hash = createHash('sha256');
  const temp = `${files.file}.partial`;
  const handle = await open(temp, 'w');
  try {
    for (const part of parts) {
      const bytes = await readFile(part);
      hash.update(bytes);
      await handle.write(bytes);
    }
    if (files.format === 'json') {
      hash.update('\n]\n');
      await handle.write('\n]\n');
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, files.file);
  await Promise.all(parts.map((p) => rm(p, { force: true })));
  return hash.digest('hex');
}

/** Removes whatever an export that will never finish left behind (its parts and temp file). */
export async function removeParts(files: ExportFiles): Promise<void> {
  const names = [`${files.file}.partial`, ...Array.from({ length: files.parts }, (_, i) => partFile(files, i))];
  await Promise.all(names.map((p) => rm(p, { force: true })));
}
