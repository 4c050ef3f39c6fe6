import { describe, expect, it } from "vitest";
import { escapeHtml, html, htmlResponse, Markup } from "./html.ts";

describe("html", () => {
  it("escapes every value put into the template", () => {
    const value = `<script>alert("x")</script>&'`;
    expect(html`<p title="${value}">${value}</p>`.toString()).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
    expect(html`<b>${42}</b>`.toString()).toBe("<b>42</b>");
  });

  it("puts markup made by html in as it is, and nothing that only looks like it", () => {
    const inner = html`<em>${"<i>"}</em>`;
    expect(html`<p>${inner}</p>`.toString()).toBe("<p><em>&lt;i&gt;</em></p>");
    const posing = Object.create(Markup.prototype, {
      toString: { value: () => "<script>" },
    }) as Markup;
    expect(html`<p>${posing}</p>`.toString()).toBe("<p>&lt;script&gt;</p>");
    expect(html`<p>${{ toString: () => "<script>" } as unknown as string}</p>`.toString()).toBe(
      "<p>&lt;script&gt;</p>",
    );
  });

  it("escapeHtml leaves plain text alone", () => {
    expect(escapeHtml("Approve a client, 2 capabilities")).toBe("Approve a client, 2 capabilities");
  });

  it("htmlResponse: HTML, never cached unless told, the status and headers given", async () => {
    const response = htmlResponse(html`<p>hi</p>`, {
      status: 429,
      headers: { "retry-after": "5" },
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("retry-after")).toBe("5");
    await expect(response.text()).resolves.toBe("<p>hi</p>");
  });
});
