import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// Every exported options type documents each optional setting's default (`@default`) and shows
// itself in use (`@example`), so the generated reference answers "what happens if I leave it out";
// and every `@example` type-checks against the package, so a renamed option or export breaks here.
const SRC = join(import.meta.dirname, "..", "src");

const ROOT = join(SRC, "..");

function sources(dir: string, withTesting = false): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === "testing" && !withTesting ? [] : sources(path, withTesting);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

interface OptionsType {
  readonly where: string;
  readonly undocumented: string[];
  readonly hasExample: boolean;
}

function optionsTypes(path: string): OptionsType[] {
  const file = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: OptionsType[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) &&
      node.name.text.endsWith("Options") &&
      node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      const members = ts.isInterfaceDeclaration(node)
        ? node.members
        : ts.isTypeLiteralNode(node.type)
          ? node.type.members
          : undefined;
      const tagsOf = (n: ts.Node) => ts.getJSDocTags(n).map((tag) => tag.tagName.text);
      let hasExample = tagsOf(node).includes("example");
      const undocumented: string[] = [];
      for (const member of members ?? []) {
        if (!ts.isPropertySignature(member)) continue;
        const tags = tagsOf(member);
        if (tags.includes("example")) hasExample = true;
        if (member.questionToken !== undefined && !tags.includes("default"))
          undocumented.push(member.name.getText(file));
      }
      found.push({ where: `${relative(SRC, path)} ${node.name.text}`, undocumented, hasExample });
    } else if (
      ts.isInterfaceDeclaration(node) &&
      node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      // Other exported shapes (paths, cookie attributes, client registrations) may name a
      // default in prose; the reference shows it only through the tag.
      const undocumented = node.members
        .filter(
          (member) =>
            ts.isPropertySignature(member) &&
            member.questionToken !== undefined &&
            ts
              .getJSDocCommentsAndTags(member)
              .some((doc) => /\bDefaults?\b/.test(ts.getTextOfJSDocComment(doc.comment) ?? "")) &&
            !ts.getJSDocTags(member).some((tag) => tag.tagName.text === "default"),
        )
        .map((member) => member.name?.getText(file) ?? "?");
      if (undocumented.length > 0)
        found.push({
          where: `${relative(SRC, path)} ${node.name.text}`,
          undocumented,
          hasExample: true,
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

const all = sources(SRC).flatMap(optionsTypes);

describe("options are documented for the API reference", () => {
  it("finds the options types", () => {
    expect(all.length).toBeGreaterThan(40);
  });

  it.each(all.map((o) => [o.where, o] as const))(
    "%s: @default on every optional setting, and an @example",
    (_, o) => {
      expect(o.undocumented).toEqual([]);
      expect(o.hasExample).toBe(true);
    },
  );
});

interface Example {
  readonly where: string;
  readonly code: string;
}

function examples(path: string): Example[] {
  const text = readFileSync(path, "utf8");
  const block = /@example\s*\n(?:\s*\*.*\n)*?\s*\*\s*```ts\n((?:\s*\*.*\n)*?)\s*\*\s*```/g;
  return [...text.matchAll(block)].map((m) => ({
    where: `${relative(SRC, path)}:${text.slice(0, m.index).split("\n").length}`,
    code: (m[1] ?? "")
      .split("\n")
      .map((line) => line.replace(/^\s*\* ?/, ""))
      .join("\n"),
  }));
}

// An example leaves the reader's own values (an app, a Redis client, a store) undeclared;
// those diagnostics are the only ones tolerated, and a misspelt option is not among them.
const UNDECLARED = new Set([
  2304, // cannot find name
  2552, // cannot find name, did you mean
  2580, // cannot find name 'process' without @types/node
  2591, // the same, for 'require' and friends
  18004, // shorthand property without a value in scope
  2834, // the reader's own relative import without an extension
]);

function typeErrors(all: readonly Example[]): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.json"), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: () => {},
  });
  if (config === undefined) throw new Error("tsconfig.json did not parse");
  const files = new Map(
    all.map((example, i) => [join(ROOT, "test", `example-${i}.ts`), `export {};\n${example.code}`]),
  );
  const host = ts.createCompilerHost(config.options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists(name);
  host.readFile = (name) => files.get(name) ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files.get(name);
    return text === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, text, language, true);
  };
  const program = ts.createProgram([...files.keys()], { ...config.options, noEmit: true }, host);
  return [...files.keys()].flatMap((name, i) =>
    ts
      .getPreEmitDiagnostics(program, program.getSourceFile(name))
      .filter((d) => d.file?.fileName === name && !UNDECLARED.has(d.code))
      .map((d) => {
        const line = d.file?.getLineAndCharacterOfPosition(d.start ?? 0).line ?? 0;
        return `${all[i]?.where} (+${line - 1}): ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
      }),
  );
}

describe("examples in the API reference", () => {
  const all = sources(SRC, true).flatMap(examples);

  it("finds them", () => {
    expect(all.length).toBeGreaterThan(40);
  });

  it("type-check against the package", () => {
    expect(typeErrors(all)).toEqual([]);
  }, 60_000);
});
