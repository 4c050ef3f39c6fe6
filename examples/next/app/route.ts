import { mustAuthentication } from "portcullis";
import { routeHandlers } from "portcullis/adapters/next";
import { chain } from "@/lib/security";

// Any signed-in user.
// Every method goes through the chain, OPTIONS included (Next would answer it itself).
export const { GET, OPTIONS } = routeHandlers(chain, {
  GET: (request) => {
    const me = mustAuthentication(request);
    return Response.json({ name: me.name, authorities: me.authorities });
  },
});
