import { InvalidOptionsError } from "../core/errors.ts";
import { serializedOriginOf } from "../core/origin.ts";
import { kebabCase } from "./validate.ts";

/**
 * Features keyed by name (`camera`, `"publickey-credentials-get"`, or camelCase
 * `publickeyCredentialsGet`). A value is the allowlist: `[]` disables the
 * feature everywhere, `"*"` allows every origin, otherwise a list of `"self"`
 * and serialized origins (`"https://maps.example"`).
 */
export type PermissionsPolicyFeatures = Readonly<Record<string, readonly string[] | "*">>;

const FEATURE = /^[a-z][a-z0-9-]*$/;

/** Serializes the policy as an RFC 8941 dictionary: `camera=(), geolocation=(self "https://a.example")`. */
export function compilePermissionsPolicy(features: PermissionsPolicyFeatures): string {
  if (typeof features !== "object" || features === null || Array.isArray(features)) {
    throw new InvalidOptionsError("securityHeaders: permissionsPolicy must be an object or false");
  }
  const members: string[] = [];
  const seen = new Set<string>();
  for (const [key, allow] of Object.entries(features)) {
    const name = kebabCase(key);
    if (!FEATURE.test(name)) {
      throw new InvalidOptionsError(
        `securityHeaders: ${JSON.stringify(key)} is not a permissions-policy feature name`,
      );
    }
    if (seen.has(name)) {
      throw new InvalidOptionsError(`securityHeaders: feature ${name} is given twice`);
    }
    seen.add(name);
    if (allow === "*") {
      members.push(`${name}=*`);
      continue;
    }
    if (!Array.isArray(allow)) {
      throw new InvalidOptionsError(
        `securityHeaders: feature ${name} takes "*" or a list of "self" and origins`,
      );
    }
    const items = allow.map((item: unknown) => {
      if (item === "self") return "self";
      const origin = serializedOriginOf(item);
      if (origin !== undefined) return `"${origin}"`;
      throw new InvalidOptionsError(
        `securityHeaders: feature ${name} allows ${JSON.stringify(item)}, which is neither "self" nor a serialized origin`,
      );
    });
    members.push(`${name}=(${items.join(" ")})`);
  }
  if (members.length === 0) {
    throw new InvalidOptionsError(
      "securityHeaders: permissionsPolicy lists no features; pass false to omit it",
    );
  }
  return members.join(", ");
}
