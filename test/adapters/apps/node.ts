import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { mustAuthentication, sessionFrom } from "portcullis";
import { nodeListener } from "../../../src/adapters/node/index.ts";
import { type Kit, listen, type Served, slowChunks } from "../kit.ts";

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("application/json")) return JSON.parse(text);
  if (type.startsWith("application/x-www-form-urlencoded"))
    return Object.fromEntries(new URLSearchParams(text));
  return text;
}

function json(res: ServerResponse, value: unknown): void {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(value));
}

export function startNode(kit: Kit): Promise<Served> {
  const named = (req: IncomingMessage, res: ServerResponse) => {
    kit.hit();
    json(res, { name: mustAuthentication(req).name });
  };
  // Route-group guards: nested listeners, each wrapping a single middleware.
  const literal = nodeListener(kit.literalGuard, named);
  const scoped = nodeListener(kit.scopedGuard, named);

  const app = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    const route = `${req.method} ${path}`;
    if (route === "GET /literal/x") return literal(req, res);
    if (route === "GET /scoped/x") return scoped(req, res);
    switch (route) {
      case "GET /public/hello":
        kit.hit();
        res.setHeader("content-type", "text/plain");
        return res.end("hello");
      case "GET /public/limited":
      case "GET /boom":
        kit.hit();
        return res.end("ok");
      case "GET /public/stream":
        kit.hit();
        res.setHeader("content-type", "text/plain");
        for await (const chunk of slowChunks(kit)) res.write(chunk);
        return res.end();
      case "GET /public/route-header":
        kit.hit();
        res.setHeader("x-frame-options", "DENY");
        res.setHeader("x-leg", "route");
        return res.end("route");
      case "POST /public/session": {
        kit.hit();
        const session = sessionFrom(req);
        session?.set("saved", true);
        await session?.save();
        return json(res, { saved: session !== undefined });
      }
      case "GET /me":
      case "GET /child/x":
        return named(req, res);
      case "GET /admin/x":
        kit.hit();
        return json(res, { area: "admin", name: mustAuthentication(req).name });
      case "POST /api/echo":
        kit.hit();
        return json(res, { name: mustAuthentication(req).name, body: await readBody(req) });
      default:
        res.statusCode = 404;
        return res.end("no route");
    }
  };
  return listen(createServer(nodeListener(kit.chain, app)));
}
