import { mustAuthentication, requireRole } from "portcullis";
import { routeHandlers } from "portcullis/adapters/next";
import { chain } from "@/lib/security";

// The chain's rule only asks for a signed-in caller; this route's own guard asks for ADMIN,
// literally: STAFF does not inherit it.
export const { GET, OPTIONS } = routeHandlers(chain.append(requireRole("ADMIN")), {
  GET: (request) => Response.json({ area: "admin", name: mustAuthentication(request).name }),
});
