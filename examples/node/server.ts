import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { mustAuthentication, requireRole } from "portcullis";
import { nodeListener } from "portcullis/adapters/node";
import { banner, exampleChain } from "../shared/security.js";

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? null : JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

// A literal role guard around one listener, next to the route it guards.
const adminPanel = nodeListener(requireRole("ADMIN"), (req, res) =>
  json(res, 200, { area: "admin", name: mustAuthentication(req).name }),
);

async function app(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const route = `${req.method} ${(req.url ?? "/").split("?")[0]}`;
  if (route === "GET /public/hello") return json(res, 200, { message: "hello, whoever you are" });
  if (route === "GET /" || route === "GET /me") {
    const me = mustAuthentication(req);
    return json(res, 200, { name: me.name, authorities: me.authorities });
  }
  if (route === "GET /staff/reports")
    return json(res, 200, { area: "staff", name: mustAuthentication(req).name });
  if (route === "POST /notes")
    return json(res, 201, { by: mustAuthentication(req).name, note: await body(req) });
  if (route === "GET /admin/panel") return adminPanel(req, res);
  json(res, 404, { error: "no such route" });
}

// The chain runs before the listener for every request, unmatched paths included.
const port = Number(process.env.PORT ?? 3000);
createServer(nodeListener(exampleChain(), app)).listen(port, "127.0.0.1", () =>
  banner("node:http", `http://127.0.0.1:${port}`),
);
