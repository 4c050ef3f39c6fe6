import { nextMiddleware } from "portcullis/adapters/next";
import { chain } from "./lib/security.ts";

// Next 16's proxy (middleware.ts before): the chain runs before Next routes anything.
export const proxy = nextMiddleware(chain);

// Route handlers under /api run the chain themselves (withChain): skipping the proxy skips nothing.
export const config = { matcher: ["/((?!api/|_next/static|_next/image).*)"] };
