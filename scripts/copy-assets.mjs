// tsc copies only TypeScript: the files the built modules read at run time
// (the PostgreSQL schema) are copied next to them.
import { copyFileSync, mkdirSync } from "node:fs";

for (const file of ["stores/postgres/migration.sql"]) {
  mkdirSync(new URL(`../dist/${file}/..`, import.meta.url), { recursive: true });
  copyFileSync(
    new URL(`../src/${file}`, import.meta.url),
    new URL(`../dist/${file}`, import.meta.url),
  );
}
