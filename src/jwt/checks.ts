import { InvalidOptionsError } from "../core/errors.ts";

// A media-type-like name: what `typ` must look like to say what a token is for.
const TYP = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

export function checkTyp(where: string, typ: unknown): string {
  if (typeof typ !== "string" || !TYP.test(typ) || typ.toLowerCase() === "jwt")
    throw new InvalidOptionsError(
      `${where}: typ must name what the token is for (e.g. "example+jwt"), not be generic`,
    );
  return typ;
}

export function checkIssuer(where: string, issuer: unknown): string {
  if (typeof issuer !== "string" || !URL.canParse(issuer))
    throw new InvalidOptionsError(`${where}: issuer must be an absolute URL`);
  return issuer;
}

export function positiveSeconds(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 31_536_000)
    throw new InvalidOptionsError(`${where}: ${name} must be a whole number of seconds, 1 or more`);
  return value;
}
