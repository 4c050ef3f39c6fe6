import { mustAuthentication } from "portcullis";
import { withChain } from "portcullis/adapters/next";
import { chain } from "../lib/security.ts";

// Any signed-in user.
export const GET = withChain(chain, (request) => {
  const me = mustAuthentication(request);
  return Response.json({ name: me.name, authorities: me.authorities });
});
