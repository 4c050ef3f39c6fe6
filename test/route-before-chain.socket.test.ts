/**
 * Express runs its stack in registration order: a route registered before
 * `app.use(expressMiddleware(chain))` answers without the chain (anonymous
 * callers included) and the chain never hears of it. The adapter looks at the
 * stack it sits in when the first request reaches it, and warns.
 */
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { authz, newChain, requireRole } from "../src/index.ts";
import { serveListener, type TestServer } from "./support/listen.ts";
import { captureWarnings } from "./warnings.ts";

const warnings = captureWarnings();

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const chain = () =>
  newChain({
    session: false,
    csrf: false,
    authorization: authz.routes([authz.match("GET", "/public/**").permitAll()]),
  });

const codes = () => warnings.map((warning) => warning.code);

describe("an Express route registered before the chain", () => {
  it("answers anonymous callers, and the first request through the chain warns, naming it", async () => {
    const app = express();
    app.get("/reports", (_req, res) => res.send("every report"));
    app.use(expressMiddleware(chain()));
    app.get("/public/hello", (_req, res) => res.send("hello"));
    served = await serveListener(app);

    // The fail-open this warns about: no chain ran for it.
    expect((await fetch(`${served.url}/reports`)).status).toBe(200);
    expect(warnings).toEqual([]);

    expect((await fetch(`${served.url}/public/hello`)).status).toBe(200);
    expect(codes()).toEqual(["PORTCULLIS_ROUTE_BEFORE_CHAIN"]);
    expect(warnings[0]?.message).toContain("GET /reports");
    expect(warnings[0]?.message).toContain("expressMiddleware");

    // Once per process.
    expect((await fetch(`${served.url}/nothing`)).status).toBe(401);
    expect(codes()).toEqual(["PORTCULLIS_ROUTE_BEFORE_CHAIN"]);
  });

  it("warns about a router mounted before the chain", async () => {
    const app = express();
    const api = express.Router();
    api.post("/orders", (_req, res) => res.send("ordered"));
    app.use("/api", api);
    app.use(expressMiddleware(chain()));
    served = await serveListener(app);

    expect((await fetch(`${served.url}/nothing`)).status).toBe(401);
    expect(codes()).toEqual(["PORTCULLIS_ROUTE_BEFORE_CHAIN"]);
    expect(warnings[0]?.message).toContain("/api");
  });

  it("warns about a route before a guard mounted on the same router", async () => {
    const app = express();
    const everyone = authz.routes([authz.anyRequest().permitAll()]);
    app.use(expressMiddleware(newChain({ session: false, csrf: false, authorization: everyone })));
    const admin = express.Router();
    admin.get("/audit", (_req, res) => res.send("audit log"));
    admin.use(expressMiddleware(requireRole("ADMIN")));
    admin.get("/panel", (_req, res) => res.send("panel"));
    app.use("/admin", admin);
    served = await serveListener(app);

    expect((await fetch(`${served.url}/admin/panel`)).status).toBe(401);
    expect(codes()).toEqual(["PORTCULLIS_ROUTE_BEFORE_CHAIN"]);
    expect(warnings[0]?.message).toContain("GET /audit");
  });

  it("stays quiet when the chain comes first, body parsers and all", async () => {
    const app = express();
    app.use(expressMiddleware(chain()));
    app.use(express.json());
    app.get("/public/hello", (_req, res) => res.send("hello"));
    const admin = express.Router();
    admin.use(expressMiddleware(requireRole("ADMIN")));
    admin.get("/panel", (_req, res) => res.send("panel"));
    app.use("/admin", admin);
    served = await serveListener(app);

    expect((await fetch(`${served.url}/public/hello`)).status).toBe(200);
    expect((await fetch(`${served.url}/admin/panel`)).status).toBe(401);
    expect(warnings).toEqual([]);
  });

  it("counts only what lies under a chain mounted at a path", async () => {
    const app = express();
    app.get("/health", (_req, res) => res.send("ok")); // outside /api: not the chain's to guard
    app.get("/api/early", (_req, res) => res.send("early"));
    app.use("/api", expressMiddleware(chain()));
    app.get("/api/late", (_req, res) => res.send("late"));
    served = await serveListener(app);

    expect((await fetch(`${served.url}/api/late`)).status).toBe(401);
    expect(codes()).toEqual(["PORTCULLIS_ROUTE_BEFORE_CHAIN"]);
    expect(warnings[0]?.message).toContain("GET /api/early");
    expect(warnings[0]?.message).not.toContain("/health");
  });

  it("stays quiet about routes outside the path a chain is mounted at", async () => {
    const app = express();
    app.get("/health", (_req, res) => res.send("ok"));
    app.use("/api", expressMiddleware(chain()));
    served = await serveListener(app);

    expect((await fetch(`${served.url}/api/x`)).status).toBe(401);
    expect(warnings).toEqual([]);
  });

  it("stays quiet about middleware before the chain that is no route", async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.setHeader("x-request-id", "1");
      next();
    });
    app.use(expressMiddleware(chain()));
    app.get("/public/hello", (_req, res) => res.send("hello"));
    served = await serveListener(app);

    expect((await fetch(`${served.url}/public/hello`)).status).toBe(200);
    expect(warnings).toEqual([]);
  });
});
