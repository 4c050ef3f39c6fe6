import { serve } from "@hono/node-server";
import { createExampleHandler, demoUsers } from "./app.ts";

const port = Number(process.env.PORT ?? 3000);
const host = "127.0.0.1";
const users = demoUsers();

serve({ fetch: createExampleHandler(users), port, hostname: host }, (info) => {
  const url = `http://${host}:${info.port}`;
  console.log(`Portcullis example listening on ${url}`);
  console.log("");
  console.log("!! DEMO ACCOUNTS, FOR LOCAL USE ONLY: their passwords are public. !!");
  for (const user of users) {
    const fixed = !process.env[`PORTCULLIS_DEMO_${user.name.toUpperCase()}_PASSWORD`];
    console.log(
      `   ${user.name.padEnd(6)} ${user.authorities.join(",").padEnd(6)} ${fixed ? `password ${user.password}` : "password from the environment"}`,
    );
  }
  console.log("");
  console.log(`Try: curl ${url}/public/hello`);
  console.log(`     curl -u sam:demo-sam ${url}/staff/reports`);
  console.log(`     curl -u ada:demo-ada ${url}/admin/panel`);
});
