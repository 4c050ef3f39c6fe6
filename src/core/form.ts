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
  return (await formFields(request, name, maxBytes))[0];
}

/** Every string value of field `name` in a form body, in order; as `formField`, none when unreadable. */
export async function formFields(
  request: Request,
  name: string,
  maxBytes: number,
): Promise<string[]> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded" && type !== "multipart/form-data") return [];
  if (request.body === null || request.bodyUsed) return [];
  // A declared length over the limit is refused without reading a byte.
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) return [];
  const bytes = await readAtMost(request.clone().body, maxBytes);
  if (bytes === undefined) return [];
  try {
    if (type === "application/x-www-form-urlencoded") {
      return new URLSearchParams(new TextDecoder().decode(bytes)).getAll(name);
    }
    const form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": request.headers.get("content-type") as string },
    }).formData();
    return form.getAll(name).filter((value): value is string => typeof value === "string");
  } catch {
    return []; // a malformed form carries nothing
  }
}
