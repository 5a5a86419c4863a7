import { createHash } from 'node:crypto';

/** One synthetic ledger line. */
export interface LedgerLine {
  date: string;
  account: string;
  memo: string;
  amountCents: number;
}

const ACCOUNTS = ['cash', 'receivables', 'payables', 'revenue', 'payroll', 'rent', 'travel', 'software'];

/**
 * The `index`-th synthetic line of a tenant's month: derived from a hash, so the same inputs
 * always give the same ledger (exports are reproducible and comparable across runs).
 */
export function ledgerLine(tenant: string, month: string, index: number): LedgerLine {
  const digest = createHash('sha256').update(`${tenant}\n${month}\n${index}`).digest();
  const day = (digest[0]! % 28) + 1;
  const account = ACCOUNTS[digest[1]! % ACCOUNTS.length]!;
  const amount = digest.readUInt32BE(2) % 1_000_000;
  return {
    date: `${month}-${String(day).padStart(2, '0')}`,
    account,
    memo: `entry ${index + 1}`,
    amountCents: digest[6]! % 2 === 0 ? amount : -amount,
  };
}

export const MONTH_PATTERN = /^\d{4}-(0[1-9]|1[0-2])$/;

export function csvHeader(): string {
  return 'date,account,memo,amount\n';
}

export function csvLine(line: LedgerLine): string {
  return `${line.date},${line.account},${line.memo},${(line.amountCents / 100).toFixed(2)}\n`;
}
