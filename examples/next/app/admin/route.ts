// Guarded by the proxy alone, as a page would be: ADMIN only.
export function GET(): Response {
  return Response.json({ area: "admin" });
}
