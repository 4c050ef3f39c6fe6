import type { Browser, Page } from "playwright-core";
import { ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler } from "../examples/hono/app.ts";
import { launchChromium } from "./browser.ts";
import { type Served, serveFetch } from "./serve.ts";

let browser: Browser;
let served: Served;

beforeAll(async () => {
  served = await serveFetch(
    await createExampleHandler({ passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }) }),
  );
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
});

async function signIn(page: Page, username: string, password: string) {
  await page.goto(`${served.url}/login`);
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await Promise.all([
    page.waitForURL(`${served.url}/`),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

describe("the example's login form in a real browser", () => {
  it("signs alice in, reaches /, and refuses her /admin/panel", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, "alice", "demo-alice");
    await expect(page.locator("#welcome").textContent()).resolves.toBe("Signed in as alice");
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "portcullis-session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Lax");

    const admin = await page.goto(`${served.url}/admin/panel`);
    expect(admin?.status()).toBe(403);
    await context.close();
  });

  it("admits ada to /admin/panel", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, "ada", "demo-ada");
    const admin = await page.goto(`${served.url}/admin/panel`);
    expect(admin?.status()).toBe(200);
    await expect(page.getByRole("heading", { name: "Admin panel" }).isVisible()).resolves.toBe(
      true,
    );
    await context.close();
  });

  it("shows the form again after a wrong password and keeps the visitor anonymous", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${served.url}/login`);
    await page.getByLabel("Username").fill("alice");
    await page.getByLabel("Password").fill("not-her-password");
    await Promise.all([
      page.waitForURL(/\/login\?error/),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
    await expect(page.locator("#error").isVisible()).resolves.toBe(true);
    // Still anonymous: the start page sends the browser back to sign-in.
    await page.goto(`${served.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await context.close();
  });

  it("signs out through the form, after which / sends the browser to sign-in", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, "sam", "demo-sam");
    await Promise.all([
      page.waitForURL(`${served.url}/login`),
      page.getByRole("button", { name: "Sign out" }).click(),
    ]);
    await page.goto(`${served.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await context.close();
  });
});
