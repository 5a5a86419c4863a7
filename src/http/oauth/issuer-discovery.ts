import { TasklatchError } from '../../core/errors.js';

/** The fields of authorization server metadata (RFC 8414, OpenID Connect Discovery) this server reads. */
export interface IssuerMetadata {
  issuer: string;
  jwks_uri: string;
}

const TIMEOUT_MS = 5000;

/**
 * Where an issuer's metadata may be, in the order the MCP authorization spec tries them: RFC 8414
 * path insertion, OpenID Connect with path insertion, then OpenID Connect appended to the path.
 */
export function metadataCandidates(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const candidates = [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
  return [...new Set(candidates)];
}

/**
 * The issuer's metadata, from the first candidate that answers with a document naming exactly this
 * issuer (RFC 8414 §3.3: another issuer's document would let it name keys for this one) and a
 * `jwks_uri`. Unreachable or unusable everywhere: an INTERNAL error, which the caller retries later.
 */
export async function discoverIssuer(issuer: string): Promise<IssuerMetadata> {
  const problems: string[] = [];
  for (const candidate of metadataCandidates(issuer)) {
    try {
      const res = await fetch(candidate, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!res.ok) {
        await res.body?.cancel();
        problems.push(`${candidate}: HTTP ${res.status}`);
        continue;
      }
      const doc = (await res.json()) as Partial<Record<keyof IssuerMetadata, unknown>>;
      if (doc.issuer !== issuer) {
        problems.push(`${candidate}: names issuer ${JSON.stringify(doc.issuer)}, not ${JSON.stringify(issuer)}`);
        continue;
      }
      if (typeof doc.jwks_uri !== 'string' || !URL.canParse(doc.jwks_uri)) {
        problems.push(`${candidate}: no jwks_uri (an absolute URL)`);
        continue;
      }
      return { issuer, jwks_uri: doc.jwks_uri };
    } catch (error) {
      problems.push(`${candidate}: ${(error as Error).message}`);
    }
  }
  throw new TasklatchError('INTERNAL', `no usable metadata for issuer ${issuer}: ${problems.join('; ')}`);
}
