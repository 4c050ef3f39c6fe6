import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import { Hono } from "hono";
import { methodOverride } from "hono/method-override";
import { afterAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { authz } from "../src/index.ts";
import { basic, basicChain } from "./basic-chain.ts";

const { match, anyRequest } = authz;
const closers: Array<() => void> = [];
afterAll(() => {
  for (const close of closers) close();
});

const securityChain = () =>
  basicChain([
    match("DELETE", "/items/**").hasRole("ADMIN"),
    match("GET", "/reports/**").hasRole("ADMIN"),
    anyRequest().authenticated(),
  ]);

async function hono(override: "form" | "query" = "form"): Promise<string> {
  const app = new Hono();
  app.use(
    "/items/*",
    override === "form" ? methodOverride({ app }) : methodOverride({ app, query: "_method" }),
  );
  app.post("/items/:id", (c) => c.text("posted"));
  app.delete("/items/:id", (c) => c.text("deleted"));
  app.get("/reports/:id", (c) => c.text("report", 200, { "x-row-count": "1342" }));
  const handler = securityChain().wrap(app.fetch);
  return new Promise((resolve) => {
    const server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
      resolve(`http://127.0.0.1:${info.port}`),
    );
    closers.push(() => server.close());
  });
}

async function expressApp(): Promise<string> {
  const app = express();
  app.use(expressMiddleware(securityChain()));
  // What the method-override package does with its default getter, after the chain: a list of
  // methods in the header dispatches as its first.
  app.use((req, _res, next) => {
    const asked = req.get("x-http-method-override")?.split(",")[0]?.trim();
    if (req.method === "POST" && asked) req.method = asked.toUpperCase();
    next();
  });
  app.get("/reports/:id", (_req, res) => {
    res.set("x-row-count", "1342").send("report");
  });
  app.post("/items/:id", (_req, res) => {
    res.send("posted");
  });
  app.delete("/items/:id", (_req, res) => {
    res.send("deleted");
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("Hono's methodOverride after the chain", () => {
  it("cannot turn a USER's POST into the ADMIN-only DELETE through a form field", async () => {
    const base = await hono();
    const post = (who: string) =>
      fetch(`${base}/items/1`, {
        method: "POST",
        headers: { authorization: basic(who), "content-type": "application/x-www-form-urlencoded" },
        body: "_method=DELETE",
      });
    const asUser = await post("user");
    expect(asUser.status).toBe(403);
    expect(await asUser.text()).not.toBe("deleted");
    expect(await (await post("admin")).text()).toBe("deleted");
    // A plain POST is still the USER's.
    const plain = await fetch(`${base}/items/1`, {
      method: "POST",
      headers: {
        authorization: basic("user"),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "name=x",
    });
    expect(await plain.text()).toBe("posted");
  });

  it("cannot do it by repeating the field (Hono dispatches the last)", async () => {
    const base = await hono();
    const response = await fetch(`${base}/items/1`, {
      method: "POST",
      headers: {
        authorization: basic("user"),
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "_method=POST&_method=DELETE",
    });
    expect(response.status).toBe(403);
    expect(await response.text()).not.toBe("deleted");
  });

  it("cannot do it through a query parameter whose name is percent-encoded", async () => {
    const base = await hono("query");
    for (const query of ["_method=DELETE", "%5Fmethod=DELETE", "_%6Dethod=delete"]) {
      const response = await fetch(`${base}/items/1?${query}`, {
        method: "POST",
        headers: { authorization: basic("user") },
      });
      expect(response.status, query).toBe(403);
    }
  });

  it("runs a GET route for HEAD, so HEAD must pass the GET rule", async () => {
    const base = await hono();
    const head = (who: string) =>
      fetch(`${base}/reports/1`, { method: "HEAD", headers: { authorization: basic(who) } });
    const asUser = await head("user");
    expect(asUser.status).toBe(403);
    expect(asUser.headers.get("x-row-count")).toBeNull();
    expect((await head("admin")).status).toBe(200);
  });

  it("cannot do it through a multipart form either", async () => {
    const base = await hono();
    const form = new FormData();
    form.set("_method", "DELETE");
    const response = await fetch(`${base}/items/1`, {
      method: "POST",
      headers: { authorization: basic("user") },
      body: form,
    });
    expect(response.status).toBe(403);
  });
});

describe("an Express method override after the chain", () => {
  it("cannot turn a USER's POST into the ADMIN-only DELETE through X-HTTP-Method-Override", async () => {
    const base = await expressApp();
    const post = (who: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/items/1`, {
        method: "POST",
        headers: { authorization: basic(who), ...headers },
      });
    const overridden = await post("user", { "x-http-method-override": "DELETE" });
    expect(overridden.status).toBe(403);
    expect(await (await post("user")).text()).toBe("posted");
    expect(await (await post("admin", { "x-http-method-override": "DELETE" })).text()).toBe(
      "deleted",
    );
  });

  it("cannot do it with a list of methods in the header (the first is dispatched)", async () => {
    const base = await expressApp();
    for (const asked of ["DELETE, POST", "DELETE,X", "delete , post"]) {
      const response = await fetch(`${base}/items/1`, {
        method: "POST",
        headers: { authorization: basic("user"), "x-http-method-override": asked },
      });
      expect(response.status, asked).toBe(403);
    }
  });

  it("runs a GET route for HEAD, so HEAD must pass the GET rule", async () => {
    const base = await expressApp();
    const asUser = await fetch(`${base}/reports/1`, {
      method: "HEAD",
      headers: { authorization: basic("user") },
    });
    expect(asUser.status).toBe(403);
    expect(asUser.headers.get("x-row-count")).toBeNull();
  });

  it("decides on ?_method= and the other override headers too", async () => {
    const base = await expressApp();
    for (const [suffix, headers] of [
      ["?_method=delete", {}],
      ["", { "x-http-method": "DELETE" }],
      ["", { "x-method-override": "delete" }],
    ] as const) {
      const response = await fetch(`${base}/items/1${suffix}`, {
        method: "POST",
        headers: { authorization: basic("user"), ...headers },
      });
      expect(response.status, `${suffix} ${JSON.stringify(headers)}`).toBe(403);
    }
  });
});
