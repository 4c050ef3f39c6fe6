import express from "express";
import { mustAuthentication, requireRole } from "portcullis";
import { expressMiddleware } from "portcullis/adapters/express";
import { banner, exampleChain } from "../shared/security.js";

const app = express();
// The whole chain first: it covers every path, unmatched ones included.
app.use(expressMiddleware(exampleChain()));
app.use(express.json());

app.get("/public/hello", (_req, res) => {
  res.json({ message: "hello, whoever you are" });
});
app.get(["/", "/me"], (req, res) => {
  const me = mustAuthentication(req);
  res.json({ name: me.name, authorities: me.authorities });
});
app.get("/staff/reports", (req, res) => {
  res.json({ area: "staff", name: mustAuthentication(req).name });
});
app.post("/notes", (req, res) => {
  res.status(201).json({ by: mustAuthentication(req).name, note: req.body });
});

// A literal role guard on one router, next to the routes it guards.
const admin = express.Router();
admin.use(expressMiddleware(requireRole("ADMIN")));
admin.get("/panel", (req, res) => {
  res.json({ area: "admin", name: mustAuthentication(req).name });
});
app.use("/admin", admin);

const port = Number(process.env.PORT ?? 3000);
app.listen(port, "127.0.0.1", () => banner("Express", `http://127.0.0.1:${port}`));
