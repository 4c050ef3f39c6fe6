import { nextMiddleware } from "portcullis/adapters/next";
import { chain } from "@/lib/security";

// Next 16's proxy (middleware.ts before): the chain runs before Next routes anything.
export const proxy = nextMiddleware(chain);

// Route handlers that run the chain themselves (withChain: under /api, `/` and /admin/panel)
// are left out, so their callers are not checked twice; skipping the proxy skips nothing there.
export const config = {
  matcher: ["/((?!api/|admin/panel$|_next/static|_next/image).+)"],
};
