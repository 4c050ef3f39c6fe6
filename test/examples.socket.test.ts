import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicHeader } from "./helpers.ts";
import { freePort } from "./processes.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ALICE = basicHeader("alice", "demo-alice"); // USER
const SAM = basicHeader("sam", "demo-sam"); // STAFF
const ADA = basicHeader("ada", "demo-ada"); // ADMIN
const COOKIE = "portcullis-session"; // the examples serve plain HTTP, so no __Host- prefix

/** Starts `examples/<framework>/server.ts` as `npm start` would, and waits for its banner. */
async function startExample(framework: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", `examples/${framework}/server.ts`],
    { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (/Portcullis (example listening )?on/.test(output)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) =>
      reject(new Error(`${framework} example exited ${code}:\n${output}`)),
    );
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

function sessionCookie(response: Response): string | undefined {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${COOKIE}=`) && pair.length > COOKIE.length + 1) return pair;
  }
  return undefined;
}

describe.each(["express", "fastify", "koa", "node"])(
  "the %s example, over a socket",
  (framework) => {
    let child: ChildProcess | undefined;
    let base = "";
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { headers, redirect: "manual" });

    beforeAll(async () => {
      ({ child, base } = await startExample(framework));
    }, 60_000);

    afterAll(() => {
      child?.kill();
    });

    it("lets anyone read /public/hello, and answers an anonymous GET / with 401 and a challenge", async () => {
      expect((await get("/public/hello")).status).toBe(200);
      const anonymous = await get("/");
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic /);
    });

    it("serves GET / to any signed-in user", async () => {
      const response = await get("/", { authorization: ALICE });
      expect(response.status).toBe(200);
      await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
    });

    it("keeps /admin/panel to ADMIN through the route group's literal guard", async () => {
      expect((await get("/admin/panel", { authorization: ALICE })).status).toBe(403);
      expect((await get("/admin/panel", { authorization: SAM })).status).toBe(403);
      const ada = await get("/admin/panel", { authorization: ADA });
      expect(ada.status).toBe(200);
      await expect(ada.json()).resolves.toEqual({ area: "admin", name: "ada" });
    });

    it("lets STAFF, and ADMIN through the hierarchy, read /staff/reports; USER is refused", async () => {
      expect((await get("/staff/reports", { authorization: SAM })).status).toBe(200);
      expect((await get("/staff/reports", { authorization: ADA })).status).toBe(200);
      expect((await get("/staff/reports", { authorization: ALICE })).status).toBe(403);
    });

    it("denies paths no rule covers, with the security headers on the denial", async () => {
      const response = await get("/nothing/here", { authorization: ADA });
      expect(response.status).toBe(403);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
    });

    it("signs in through GET /csrf and POST /login, then serves GET / to the session", async () => {
      const csrf = await get("/csrf");
      expect(csrf.status).toBe(200);
      const { token, headerName } = (await csrf.json()) as { token: string; headerName: string };
      const cookie = sessionCookie(csrf);
      expect(cookie).toBeDefined();
      const credentials = JSON.stringify({ username: "alice", password: "demo-alice" });
      const forged = await fetch(`${base}/login`, {
        method: "POST",
        headers: { cookie: cookie as string, "content-type": "application/json" },
        body: credentials,
      });
      expect(forged.status).toBe(403); // no token
      const signedIn = await fetch(`${base}/login`, {
        method: "POST",
        headers: {
          cookie: cookie as string,
          [headerName]: token,
          "content-type": "application/json",
        },
        body: credentials,
      });
      expect(signedIn.status).toBe(200);
      const rotated = sessionCookie(signedIn);
      expect(rotated).toBeDefined();
      expect(rotated).not.toBe(cookie);
      const home = await get("/", { cookie: rotated as string });
      expect(home.status).toBe(200);
      await expect(home.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
      // The id from before the login is dead.
      expect((await get("/", { cookie: cookie as string })).status).toBe(401);
    });

    it("accepts a Basic-authenticated JSON post from a non-browser client", async () => {
      const response = await fetch(`${base}/notes`, {
        method: "POST",
        headers: { authorization: ALICE, "content-type": "application/json" },
        body: JSON.stringify({ text: "hi" }),
      });
      expect(response.status).toBe(201);
      await expect(response.json()).resolves.toEqual({ by: "alice", note: { text: "hi" } });
    });
  },
);

describe("the device flow of the Hono example (npm start), over a socket", () => {
  let child: ChildProcess | undefined;
  let device: ChildProcess | undefined;
  let base = "";

  beforeAll(async () => {
    ({ child, base } = await startExample("hono"));
  }, 60_000);

  afterAll(() => {
    child?.kill();
    device?.kill();
  });

  it("signs the demo device in as the human who approves its code at /device", async () => {
    device = spawn(
      process.execPath,
      ["--conditions=source", "--import", "tsx", "examples/device/device.ts", base],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    device.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    device.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    const exited = new Promise<number | null>((resolve) => device?.on("exit", resolve));
    while (!/enter the code ([A-Z]{4}-[A-Z]{4})/.test(output)) {
      if (device.exitCode !== null) throw new Error(output);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const userCode = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(output)?.[1] as string;

    const csrf = await fetch(`${base}/csrf`);
    const { token, headerName } = (await csrf.json()) as { token: string; headerName: string };
    const signedIn = await fetch(`${base}/login`, {
      method: "POST",
      headers: {
        cookie: sessionCookie(csrf) as string,
        [headerName]: token,
        "content-type": "application/json",
      },
      body: JSON.stringify({ username: "alice", password: "demo-alice" }),
    });
    const cookie = sessionCookie(signedIn) as string;
    const page = await fetch(`${base}/device?user_code=${userCode}`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`value="${userCode}"`);
    const formToken = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] as string;
    // Without a session the approval is refused by the chain.
    const anonymous = await fetch(`${base}/device/approve`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ user_code: userCode, action: "approve" }).toString(),
    });
    expect(anonymous.status).toBe(401);
    const approved = await fetch(`${base}/device/approve`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        _csrf: formToken,
        user_code: userCode,
        action: "approve",
      }).toString(),
    });
    expect(approved.status).toBe(200);
    expect(await exited).toBe(0);
    expect(output).toContain("Signed in as alice");
  }, 30_000);
});
