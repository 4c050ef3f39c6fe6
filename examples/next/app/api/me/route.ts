import { mustAuthentication } from "portcullis";
import { withChain } from "portcullis/adapters/next";
import { chain } from "../../../lib/security.ts";

// The whole chain runs here, in-process: the principal comes from it, never from a header.
export const GET = withChain(chain, (request) => {
  const me = mustAuthentication(request);
  return Response.json({ name: me.name, authorities: me.authorities });
});
