/**
 * A Secure session cookie set on plain HTTP for a named host is dropped by the
 * browser, so the sign-in form's POST arrives without a session and the CSRF
 * leg refuses it. Outside production the refusal says why, on the page a
 * person sees (the default 403 page) and in the problem JSON; in production it
 * says nothing more than before.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  authz,
  csrf,
  csrfToken,
  login,
  newHandler,
  passwordCredentials,
  sessions,
} from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";
import { captureWarnings } from "./warnings.ts";

captureWarnings(); // the server log's warning is someone else's test

afterEach(() => {
  vi.unstubAllEnvs();
});

const credentials = passwordCredentials({
  findUser: (name) =>
    name === "alice" ? { name, authorities: ["USER"], passwordHash: "{plain}pw" } : undefined,
  passwordEncoder: plainTextEncoder(),
});

function app(secure?: boolean) {
  return newHandler(
    async (request) =>
      new Response(`<form method="post"><input name="_csrf" value="${await csrfToken(request)}">`, {
        headers: { "content-type": "text/html" },
      }),
    {
      ...(secure === undefined ? {} : { session: sessions({ secure }) }),
      csrf: csrf(),
      login: login({ credentials }),
      browserDenials: { signInPath: "/login" },
      authorization: authz.routes([authz.match("GET", "/login").permitAll()]),
    },
  );
}

const NAVIGATION = { "sec-fetch-mode": "navigate", "sec-fetch-site": "same-origin" };
const API = { "sec-fetch-mode": "cors", "sec-fetch-site": "same-origin" };

/** The form page, then its POST as a browser that dropped every cookie sends it. */
async function signInWithoutCookie(
  base: string,
  headers: Record<string, string>,
  secure?: boolean,
) {
  const handler = app(secure);
  const form = await handler(new Request(`${base}/login`));
  expect(form.status).toBe(200);
  expect(form.headers.get("set-cookie")).not.toBeNull();
  const token = /value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  return handler(
    new Request(`${base}/login`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: token, username: "alice", password: "pw" }),
    }),
  );
}

describe("a sign-in whose Secure session cookie the browser dropped on plain HTTP", () => {
  it("explains itself on the 403 page outside production", async () => {
    const response = await signInWithoutCookie("http://intranet.example:3000", NAVIGATION);
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await response.text();
    expect(page).toContain("Not allowed");
    expect(page).toContain("Secure");
    expect(page).toContain("http://intranet.example:3000");
    expect(page).toContain("secure: false");
  });

  it("explains itself in the problem JSON outside production", async () => {
    const response = await signInWithoutCookie("http://intranet.example", API);
    expect(response.status).toBe(403);
    const problem = (await response.json()) as { detail: string };
    expect(problem.detail).toContain("A session and a CSRF token are required.");
    expect(problem.detail).toContain("plain HTTP");
  });

  it("says nothing more in production", async () => {
    vi.stubEnv("NODE_ENV", "production");
    const page = await (await signInWithoutCookie("http://intranet.example", NAVIGATION)).text();
    expect(page).toContain("Not allowed");
    expect(page).not.toContain("Secure");
    const problem = (await (await signInWithoutCookie("http://intranet.example", API)).json()) as {
      detail: string;
    };
    expect(problem.detail).toBe("A session and a CSRF token are required.");
  });

  it.each([
    ["a loopback host, where browsers keep Secure cookies", "http://127.0.0.1:3000", undefined],
    ["HTTPS", "https://intranet.example", undefined],
    ["a cookie without Secure", "http://intranet.example", false],
  ] as const)("stays as it was for %s", async (_case, base, secure) => {
    const response = await signInWithoutCookie(base, API, secure);
    expect(response.status).toBe(403);
    const problem = (await response.json()) as { detail: string };
    expect(problem.detail).toBe("A session and a CSRF token are required.");
  });
});
