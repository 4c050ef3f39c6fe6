import { type BodyRead, mediaTypeOf, readRequestBody } from "./body.ts";

/** A form body that broke off while it was read: the caller answers 400. */
export type UnreadableForm = Extract<BodyRead, { outcome: "unreadable" }>;

/**
 * The string value of field `name` in a urlencoded or multipart form body, read
 * from a clone so the body stays for the handler; `undefined` when the body is
 * no form, already used, larger than `maxBytes`, malformed, or lacks the field.
 */
export async function formField(
  request: Request,
  name: string,
  maxBytes: number,
): Promise<string | undefined | UnreadableForm> {
  const fields = await formFields(request, name, maxBytes);
  return Array.isArray(fields) ? fields[0] : fields;
}

/**
 * Every string value of field `name` in a form body, in order; as `formField`,
 * none when there is no form to read, and `unreadable` when the client broke
 * the body off.
 */
export async function formFields(
  request: Request,
  name: string,
  maxBytes: number,
): Promise<string[] | UnreadableForm> {
  const type = formType(request);
  if (type === undefined) return [];
  if (request.body === null || request.bodyUsed) return [];
  const read = await readRequestBody(request, maxBytes, { keep: true });
  if (read.outcome === "unreadable") return read;
  if (read.outcome === "too_large") return [];
  try {
    if (type === "application/x-www-form-urlencoded") {
      return new URLSearchParams(new TextDecoder().decode(read.bytes)).getAll(name);
    }
    const form = await new Response(read.bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": request.headers.get("content-type") as string },
    }).formData();
    return form.getAll(name).filter((value): value is string => typeof value === "string");
  } catch {
    return []; // a malformed form carries nothing
  }
}

/** Whether a form read came to a body the client broke off. */
export function isUnreadableForm(value: unknown): value is UnreadableForm {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    (value as { outcome?: unknown }).outcome === "unreadable"
  );
}

/** The media type of a form body (urlencoded or multipart), `undefined` for any other body. */
export function formType(
  request: Request,
): "application/x-www-form-urlencoded" | "multipart/form-data" | undefined {
  const type = mediaTypeOf(request);
  return type === "application/x-www-form-urlencoded" || type === "multipart/form-data"
    ? type
    : undefined;
}
