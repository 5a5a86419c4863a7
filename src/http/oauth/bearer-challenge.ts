/** The `error` codes of a Bearer challenge this server sends (RFC 6750 §3.1). */
export type BearerError = 'invalid_token' | 'insufficient_scope';

/**
 * The `WWW-Authenticate` value of a refusal. `resource_metadata` (RFC 9728 §5.1) is how an MCP
 * client finds the authorization server; quoting keeps a URL's commas and spaces inside it.
 */
export function bearerChallenge(fields: { error?: BearerError; scope?: string; resourceMetadata?: string }): string {
  const params: string[] = [];
  if (fields.error !== undefined) params.push(`error="${fields.error}"`);
  if (fields.scope !== undefined) params.push(`scope="${quoted(fields.scope)}"`);
  if (fields.resourceMetadata !== undefined) params.push(`resource_metadata="${quoted(fields.resourceMetadata)}"`);
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}

function quoted(value: string): string {
  return value.replace(/["\\]/g, (c) => `\\${c}`);
}
