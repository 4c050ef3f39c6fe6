import { createServer } from "node:http";
import { Readable } from "node:stream";
import express from "express";
import { mustAuthentication, sessionFrom } from "portcullis";
import { expressMiddleware } from "../../../src/adapters/express/index.ts";
import { type Kit, listen, type Served, slowChunks } from "../kit.ts";

export interface ExpressAppOptions {
  /** Mount express.json()/urlencoded() before the chain instead of after it. */
  readonly parsersFirst?: boolean;
}

export function startExpress(kit: Kit, options: ExpressAppOptions = {}): Promise<Served> {
  const app = express();
  const parsers = [express.json(), express.urlencoded()];
  if (options.parsersFirst) app.use(...parsers);
  app.use(expressMiddleware(kit.chain));
  if (!options.parsersFirst) app.use(...parsers);

  app.get("/public/hello", (_req, res) => {
    kit.hit();
    res.type("text").send("hello");
  });
  app.get("/public/limited", (_req, res) => {
    kit.hit();
    res.send("ok");
  });
  app.get("/public/stream", (_req, res) => {
    kit.hit();
    res.type("text");
    Readable.from(slowChunks(kit)).pipe(res);
  });
  app.get("/public/route-header", (_req, res) => {
    kit.hit();
    res.set("x-frame-options", "DENY").set("x-leg", "route").send("route");
  });
  app.post("/public/session", async (req, res) => {
    kit.hit();
    const session = sessionFrom(req);
    session?.set("saved", true);
    await session?.save();
    res.json({ saved: session !== undefined });
  });
  app.get("/me", (req, res) => {
    kit.hit();
    res.json({ name: mustAuthentication(req).name });
  });
  app.get("/admin/x", (req, res) => {
    kit.hit();
    res.json({ area: "admin", name: mustAuthentication(req).name });
  });
  app.post("/api/echo", (req, res) => {
    kit.hit();
    res.json({ name: mustAuthentication(req).name, body: req.body ?? null });
  });
  const literal = express.Router();
  literal.use(expressMiddleware(kit.literalGuard));
  literal.get("/x", (req, res) => {
    kit.hit();
    res.json({ name: mustAuthentication(req).name });
  });
  app.use("/literal", literal);
  const scoped = express.Router();
  scoped.use(expressMiddleware(kit.scopedGuard));
  scoped.get("/x", (req, res) => {
    kit.hit();
    res.json({ name: mustAuthentication(req).name });
  });
  app.use("/scoped", scoped);
  app.get("/child/x", (req, res) => {
    kit.hit();
    res.json({ name: mustAuthentication(req).name });
  });
  app.get("/boom", (_req, res) => {
    kit.hit();
    res.send("boom");
  });
  return listen(createServer(app));
}
