import { base64url, fromBase64url } from "../core/encoding.ts";
import type { Session } from "../session/index.ts";

const encoder = new TextEncoder();
const LABEL = "portcullis-csrf:";
const SALT_BYTES = 16;
const keys = new WeakMap<Session, { id: string; key: Promise<CryptoKey> }>();

/**
 * The HMAC key of a session's CSRF tokens is its id, so tokens stop working
 * the moment the id rotates (login, authority change, logout) and no second
 * secret has to be stored or shared between instances.
 */
function keyOf(session: Session, id: string): Promise<CryptoKey> {
  const cached = keys.get(session);
  if (cached?.id === id) return cached.key;
  const key = crypto.subtle.importKey(
    "raw",
    encoder.encode(id),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
  keys.set(session, { id, key });
  return key;
}

/**
 * A fresh token `salt.mac`, mac = HMAC-SHA256(session id, label + salt). A new
 * salt each time keeps the bytes of a page changing (BREACH) while every token
 * stays valid for the session.
 */
export async function issueToken(session: Session, id: string): Promise<string> {
  const salt = base64url(crypto.getRandomValues(new Uint8Array(SALT_BYTES)));
  const mac = await crypto.subtle.sign(
    "HMAC",
    await keyOf(session, id),
    encoder.encode(LABEL + salt),
  );
  return `${salt}.${base64url(new Uint8Array(mac))}`;
}

/** Checks a presented token against the session; the MAC comparison is constant-time (HMAC verify). */
export async function verifyToken(session: Session, id: string, token: string): Promise<boolean> {
  if (token.length > 128) return false;
  const dot = token.indexOf(".");
  if (dot <= 0) return false;
  const salt = token.slice(0, dot);
  const mac = fromBase64url(token.slice(dot + 1));
  if (mac === undefined || mac.length !== 32 || fromBase64url(salt)?.length !== SALT_BYTES)
    return false;
  return crypto.subtle.verify(
    "HMAC",
    await keyOf(session, id),
    mac as Uint8Array<ArrayBuffer>,
    encoder.encode(LABEL + salt),
  );
}
