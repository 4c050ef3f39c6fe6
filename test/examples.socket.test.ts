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
async function startExample(
  framework: string,
): Promise<{ child: ChildProcess; base: string; banner: string }> {
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
      if (
        /Portcullis[^\n]* on /.test(output) &&
        (framework !== "hono" || /\/agents\n/.test(output))
      )
        resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) =>
      reject(new Error(`${framework} example exited ${code}:\n${output}`)),
    );
  });
  return { child, base: `http://127.0.0.1:${port}`, banner: output };
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

/** Runs an example client script with `args` (and `env` added) and collects what it prints. */
function runClient(script: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", script, ...args],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const run = {
    child,
    output: "",
    exited: new Promise<number | null>((resolve) => child.on("exit", resolve)),
  };
  const collect = (chunk: Buffer) => {
    run.output += chunk.toString("utf8");
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return run;
}

async function printedCode(run: { child: ChildProcess; output: string }): Promise<string> {
  const pattern = /the code ([A-Z]{4}-[A-Z]{4})/;
  while (!pattern.test(run.output)) {
    if (run.child.exitCode !== null) throw new Error(run.output);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return pattern.exec(run.output)?.[1] as string;
}

/** Signs alice in through GET /csrf and POST /login; answers her session cookie. */
async function signIn(base: string): Promise<string> {
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
    redirect: "manual",
  });
  return sessionCookie(signedIn) as string;
}

/** Submits a code for its review page, as a person would, then approves from that page. */
async function reviewAndApprove(
  base: string,
  cookie: string,
  csrf: string,
  userCode: string,
): Promise<{ review: string; approved: Response }> {
  const form = { cookie, "content-type": "application/x-www-form-urlencoded" };
  const page = await fetch(`${base}/device`, {
    method: "POST",
    headers: form,
    body: new URLSearchParams({ _csrf: csrf, user_code: userCode }).toString(),
  });
  expect(page.status).toBe(200);
  const review = await page.text();
  const approved = await fetch(`${base}/device/approve`, {
    method: "POST",
    headers: form,
    body: new URLSearchParams({
      _csrf: formToken(review),
      user_code: userCode,
      review: /name="review" value="([^"]+)"/.exec(review)?.[1] as string,
      action: "approve",
    }).toString(),
  });
  return { review, approved };
}

function formToken(html: string): string {
  return /name="_csrf" value="([^"]+)"/.exec(html)?.[1] as string;
}

describe("the device-flow example, over a socket", () => {
  let child: ChildProcess | undefined;
  let device: ReturnType<typeof runClient> | undefined;
  let base = "";

  beforeAll(async () => {
    ({ child, base } = await startExample("device"));
  }, 60_000);

  afterAll(() => {
    child?.kill();
    device?.child.kill();
  });

  it("signs the demo device in as the human who approves its code at /device", async () => {
    device = runClient("examples/device/device.ts", [base]);
    const userCode = await printedCode(device);
    const cookie = await signIn(base);
    const page = await fetch(`${base}/device?user_code=${userCode}`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`value="${userCode}"`);
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
        _csrf: formToken(html),
        user_code: userCode,
        action: "approve",
      }).toString(),
    });
    expect(approved.status).toBe(200);
    expect(await device.exited).toBe(0);
    expect(device.output).toContain("Signed in as alice");
  }, 30_000);
});

describe("the agent demo against the Hono example (npm start), over a socket", () => {
  let child: ChildProcess | undefined;
  let agent: ReturnType<typeof runClient> | undefined;
  let base = "";
  let banner = "";

  beforeAll(async () => {
    ({ child, base, banner } = await startExample("hono"));
  }, 60_000);

  it("prints the agent commands for the port it listens on", () => {
    const port = new URL(base).port;
    expect(banner).toContain(`PORT=${port} npm run agent -- echo`);
    expect(banner).toContain(`${base}/device`);
  });

  it("npm run agent against a port nobody listens on: one line, exit 1", async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const lost = runClient("examples/agent/agent.ts", ["get_time"], { PORTCULLIS_URL: nobody });
    expect(await lost.exited).toBe(1);
    expect(lost.output.trim().split("\n").at(-1)).toBe(
      `[agent] nothing answers at ${nobody}: start the service (npm start), or set PORT or PORTCULLIS_URL to where it listens`,
    );
    expect(lost.output).not.toMatch(/^\s+at /m);
  }, 30_000);

  afterAll(() => {
    child?.kill();
    agent?.child.kill();
  });

  it("npm run agent -- export_report: approval by code, a location capability, then revocation", async () => {
    agent = runClient("examples/agent/agent.ts", ["export_report"], { PORTCULLIS_URL: base });
    const userCode = await printedCode(agent);
    const cookie = await signIn(base);
    // The link shows the code to check; submitting it leads to the review.
    const link = await fetch(`${base}/device?user_code=${userCode}`, { headers: { cookie } });
    expect(link.status).toBe(200);
    const entry = await link.text();
    expect(entry).toContain(`value="${userCode}"`);
    expect(entry).not.toContain("Demo agent");
    const { review, approved } = await reviewAndApprove(base, cookie, formToken(entry), userCode);
    expect(review).toContain("Demo agent");
    expect(review).toContain("export_report");
    expect(approved.status).toBe(200);
    expect(await agent.exited).toBe(0);
    expect(agent.output.match(/export_report → .*"for":"demo-agent"/g)).toHaveLength(2);

    const mine = await (await fetch(`${base}/agents`, { headers: { cookie } })).text();
    const grantId = /name="grant_id" value="([^"]+)"/.exec(mine)?.[1] as string;
    const revoked = await fetch(`${base}/agents/revoke`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: formToken(mine), grant_id: grantId }).toString(),
      redirect: "manual",
    });
    expect(revoked.status).toBe(303);
    const refresh = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=demo-agent&client_secret=demo-agent-secret",
    });
    expect(((await refresh.json()) as { error: string }).error).toBe("invalid_grant");
  }, 40_000);

  it("npm run agent -- echo --dpop: bound tokens, the key on /agents, the secret alone mints nothing", async () => {
    agent = runClient("examples/agent/agent.ts", ["echo", '{"text":"bound"}', "--dpop"], {
      PORTCULLIS_URL: base,
    });
    const userCode = await printedCode(agent);
    const cookie = await signIn(base);
    const entry = await (await fetch(`${base}/device`, { headers: { cookie } })).text();
    const { approved } = await reviewAndApprove(base, cookie, formToken(entry), userCode);
    expect(approved.status).toBe(200);
    expect(await agent.exited).toBe(0);
    expect(agent.output).toContain("(dpop token)");
    expect(agent.output.match(/echo → \{"text":"bound"\}/g)).toHaveLength(2);
    const key = /DPoP key (\S+)…/.exec(agent.output)?.[1] as string;
    const mine = await (await fetch(`${base}/agents`, { headers: { cookie } })).text();
    expect(mine).toContain(`>${key}…</code>`);
    const refresh = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=demo-agent&client_secret=demo-agent-secret",
    });
    expect(((await refresh.json()) as { error: string }).error).toBe("invalid_dpop_proof");
  }, 40_000);
});
