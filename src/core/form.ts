import { readAtMost } from "./body.ts";

/**
 * The string value of field `name` in a urlencoded or multipart form body, read
 * from a clone so the body stays for the handler; `undefined` when the body is
 * no form, already used, larger than `maxBytes`, malformed, or lacks the field.
 */
export async function formField(
  request: Request,
  name: string,
  maxBytes: number,
): Promise<string | undefined> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded" && type !== "multipart/form-data")
    return undefined;
  if (request.body === null || request.bodyUsed) return undefined;
  // A declared length over the limit is refused without reading a byte.
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return undefined;
  const bytes = await readAtMost(request.clone().body, maxBytes);
  if (bytes === undefined) return undefined;
  try {
    if (type === "application/x-www-form-urlencoded") {
      return new URLSearchParams(new TextDecoder().decode(bytes)).get(name) ?? undefined;
    }
    const form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": request.headers.get("content-type") as string },
    }).formData();
    const value = form.get(name);
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined; // a malformed form carries no token
  }
}
