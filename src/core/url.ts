import { InvalidOptionsError } from "./errors.ts";

const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** https, or plain http to a loopback host (local development): the rule for every URL we publish. */
export function isHttpsOrLoopback(url: URL): boolean {
  return (
    url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.includes(url.hostname))
  );
}

/**
 * An option that must be a URL we may publish: absolute, https (http only on
 * loopback), without fragment or credentials. Returns it normalized; throws
 * naming `name` (`where: key`, as the caller wrote it).
 */
export function httpsUrlOption(name: string, value: unknown): string {
  if (typeof value !== "string" || !URL.canParse(value))
    throw new InvalidOptionsError(`${name} must be an absolute URL`);
  const url = new URL(value);
  if (!isHttpsOrLoopback(url))
    throw new InvalidOptionsError(`${name} must use https (http only on loopback)`);
  if (url.hash !== "" || url.username !== "" || url.password !== "")
    throw new InvalidOptionsError(`${name} must have no fragment or credentials`);
  return url.href;
}

/** An issuer identifier (RFC 8414 §2): a URL we may publish, with no query. */
export function issuerUrlOption(where: string, value: unknown): string {
  httpsUrlOption(`${where}: issuer`, value);
  if (new URL(value as string).search !== "")
    throw new InvalidOptionsError(`${where}: issuer must have no query`);
  return value as string;
}
