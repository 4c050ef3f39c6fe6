export function GET(): Response {
  return Response.json({ message: "hello, whoever you are" });
}
