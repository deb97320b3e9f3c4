// Generates docs/API.md from the doc comments of the public API (src/index.ts).
// `npm run docs` writes it; test/docs.test.ts fails when the committed file is stale.
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const ROOT = path.join(__dirname, '..');
export const API_DOCS = path.join(ROOT, 'docs', 'API.md');

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();
const cell = (s: string) => oneLine(s).replace(/\|/g, '\\|');

function tag(symbol: ts.Symbol, name: string, checker: ts.TypeChecker): string | undefined {
  const t = symbol.getJsDocTags(checker).find(x => x.name === name);
  return t ? ts.displayPartsToString(t.text) : undefined;
}

function isHidden(symbol: ts.Symbol, checker: ts.TypeChecker): boolean {
  return symbol.name.startsWith('_') || symbol.getJsDocTags(checker).some(t => t.name === 'internal');
}

function isPublic(decl: ts.Declaration): boolean {
  const mods = ts.canHaveModifiers(decl) ? (ts.getModifiers(decl) ?? []) : [];
  return (
    !mods.some(m => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword) &&
    !(ts.isPropertyDeclaration(decl) || ts.isMethodDeclaration(decl) ? ts.isPrivateIdentifier(decl.name) : false)
  );
}

/** A type the API references from another package, named as a user of that package writes it. */
interface Foreign {
  /** As written in code: `k8s.Toleration` for cdk8s-plus-32's generated Kubernetes types, else the export name. */
  readonly name: string;
  /** The bare name the compiler prints, e.g. `Toleration`. */
  readonly bare: string;
  readonly pkg: string;
  readonly importLine: string;
}

/** The package a symbol is declared in, if it is not the library itself or TypeScript's and Node's own types. */
function foreignOf(symbol: ts.Symbol): Foreign | undefined {
  const file = symbol.declarations?.[0]?.getSourceFile().fileName.replace(/\\/g, '/');
  const match = file && /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(file);
  if (!match) return undefined;
  const [, pkg, inPkg] = match;
  if (pkg === 'typescript' || pkg.startsWith('@types/')) return undefined;
  // cdk8s-plus-32 exports its generated Kubernetes API types as the namespace `k8s` (lib/imports/k8s).
  if (pkg === 'cdk8s-plus-32' && /^lib\/imports\/k8s\.d\.ts$/.test(inPkg)) {
    return { name: `k8s.${symbol.name}`, bare: symbol.name, pkg, importLine: `import { k8s } from '${pkg}'` };
  }
  return { name: symbol.name, bare: symbol.name, pkg, importLine: `import { ${symbol.name} } from '${pkg}'` };
}

/**
 * The named types a type refers to: itself, the members of unions, type arguments, and the properties of inline object
 * types.
 */
function referencedSymbols(type: ts.Type, checker: ts.TypeChecker, seen = new Set<ts.Type>()): ts.Symbol[] {
  if (seen.has(type)) return [];
  seen.add(type);
  const walk = (t: ts.Type) => referencedSymbols(t, checker, seen);
  if (type.aliasSymbol) return [type.aliasSymbol, ...(type.aliasTypeArguments ?? []).flatMap(walk)];
  if (type.isUnionOrIntersection()) return type.types.flatMap(walk);
  if (!(type.flags & ts.TypeFlags.Object))
    return type.symbol && type.flags & ts.TypeFlags.EnumLike ? [type.symbol] : [];
  const args =
    (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference
      ? checker.getTypeArguments(type as ts.TypeReference).flatMap(walk)
      : [];
  const symbol = type.getSymbol();
  if (symbol && !(symbol.flags & (ts.SymbolFlags.TypeLiteral | ts.SymbolFlags.ObjectLiteral))) return [symbol, ...args];
  // An inline object type (`{ path?: string }`) prints its members, so their types are referenced too.
  return [
    ...args,
    ...type.getProperties().flatMap(p => walk(checker.getTypeOfSymbol(p))),
    ...type.getCallSignatures().flatMap(sig => signatureSymbols(sig, checker, seen)),
  ];
}

/** The named types of a signature's parameters and return type. */
function signatureSymbols(sig: ts.Signature, checker: ts.TypeChecker, seen = new Set<ts.Type>()): ts.Symbol[] {
  return [
    ...sig.getParameters().flatMap(p => referencedSymbols(checker.getTypeOfSymbol(p), checker, seen)),
    ...referencedSymbols(sig.getReturnType(), checker, seen),
  ];
}

/** The foreign types among some symbols, once each, in order of appearance. */
function foreignTypes(symbols: ts.Symbol[]): Foreign[] {
  const out = new Map<string, Foreign>();
  for (const s of symbols) {
    const f = foreignOf(s);
    if (f && !out.has(f.name)) out.set(f.name, f);
  }
  return [...out.values()];
}

/**
 * A printed type with each foreign type named as its package's users write it (`Toleration` becomes
 * `k8s.Toleration`). A bare name is left alone where the library has a type of that name in the same text.
 */
function qualify(text: string, foreign: Foreign[], symbols: ts.Symbol[]): string {
  for (const f of foreign) {
    if (f.name === f.bare || symbols.some(s => s.name === f.bare && !foreignOf(s))) continue;
    text = text.replace(new RegExp(`(?<![\\w.$])${f.bare}(?![\\w$])`, 'g'), f.name);
  }
  return text;
}

/** Where each foreign type comes from, for a table cell: "`k8s.Toleration` from `cdk8s-plus-32`". */
function fromNote(foreign: Foreign[]): string {
  return foreign.map(f => `\`${f.name}\` from \`${f.pkg}\``).join(', ');
}

export function renderApiDocs(): string {
  const program = ts.createProgram([path.join(ROOT, 'src', 'index.ts')], {
    strict: true,
    target: ts.ScriptTarget.ES2020,
    module: ts.ModuleKind.CommonJS,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(ROOT, 'src', 'index.ts'))!;
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
  const doc = (s: ts.Symbol) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim();
  const typeOf = (s: ts.Symbol, at: ts.Node) =>
    checker.typeToString(checker.getTypeOfSymbolAtLocation(s, at), undefined, ts.TypeFormatFlags.NoTruncation);

  const sections: Record<string, string[]> = {
    Classes: [],
    Interfaces: [],
    Enums: [],
    Types: [],
    Functions: [],
    Constants: [],
  };
  /** Every foreign type the API refers to, for the table of packages. */
  const allForeign = new Map<string, Foreign>();
  /** The foreign types among some symbols, recorded for that table. */
  const foreignIn = (symbols: ts.Symbol[]) => {
    const found = foreignTypes(symbols);
    for (const f of found) allForeign.set(f.name, f);
    return found;
  };
  /** A code span of printed type text with its foreign types qualified, and where they come from. */
  const typed = (text: string, symbols: ts.Symbol[]) => {
    const foreign = foreignIn(symbols);
    return { text: qualify(text, foreign, symbols), from: foreign.length ? ` (${fromNote(foreign)})` : '' };
  };
  for (const exported of [...exports].sort((a, b) => a.name.localeCompare(b.name))) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const decl = symbol.declarations?.[0];
    if (!decl) continue;
    const out: string[] = [`### ${exported.name}`, ''];
    if (doc(symbol)) out.push(doc(symbol), '');

    if (ts.isClassDeclaration(decl)) {
      const rows: string[] = [];
      for (const member of [
        ...checker.getPropertiesOfType(checker.getTypeOfSymbolAtLocation(symbol, decl)),
        ...checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol)),
      ]) {
        const m = member.declarations?.[0];
        if (!m || isHidden(member, checker) || !isPublic(m) || member.name === 'prototype' || m.parent !== decl)
          continue;
        const isStatic =
          ts.canHaveModifiers(m) && (ts.getModifiers(m) ?? []).some(x => x.kind === ts.SyntaxKind.StaticKeyword);
        const signature = ts.isMethodDeclaration(m) ? checker.getSignatureFromDeclaration(m)! : undefined;
        const sig = signature
          ? typed(
              checker.signatureToString(signature, undefined, ts.TypeFormatFlags.NoTruncation),
              signatureSymbols(signature, checker),
            )
          : typed(`: ${typeOf(member, m)}`, referencedSymbols(checker.getTypeOfSymbolAtLocation(member, m), checker));
        rows.push(
          `| \`${isStatic ? `${exported.name}.` : ''}${member.name}${cell(sig.text)}\`${sig.from && ` ${cell(sig.from)}`} | ${cell(doc(member))} |`,
        );
      }
      const ctor = decl.members.find(ts.isConstructorDeclaration);
      if (ctor && isPublic(ctor)) {
        const signature = checker.getSignatureFromDeclaration(ctor)!;
        const sig = typed(checker.signatureToString(signature), signatureSymbols(signature, checker));
        out.push(`\`new ${exported.name}${sig.text}\`${sig.from}`, '');
      }
      if (rows.length) out.push('| Member | Description |', '|---|---|', ...rows, '');
      sections.Classes.push(...out);
    } else if (ts.isInterfaceDeclaration(decl)) {
      const rows = checker
        .getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))
        .filter(p => !isHidden(p, checker))
        .map(p => {
          const pd = p.declarations![0];
          const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
          const def = tag(p, 'default', checker);
          const type = typed(
            typeOf(p, pd).replace(/ \| undefined$/, ''),
            referencedSymbols(checker.getTypeOfSymbolAtLocation(p, pd), checker),
          );
          return `| \`${p.name}${optional ? '?' : ''}\` | \`${cell(type.text)}\`${type.from && ` ${cell(type.from)}`} | ${def ? cell(def) : optional ? '' : 'required'} | ${cell(doc(p))} |`;
        });
      if (rows.length) out.push('| Property | Type | Default | Description |', '|---|---|---|---|', ...rows, '');
      sections.Interfaces.push(...out);
    } else if (ts.isEnumDeclaration(decl)) {
      out.push('| Member | Value | Description |', '|---|---|---|');
      for (const m of decl.members) {
        const ms = checker.getSymbolAtLocation(m.name)!;
        out.push(`| \`${ms.name}\` | \`${JSON.stringify(checker.getConstantValue(m))}\` | ${cell(doc(ms))} |`);
      }
      sections.Enums.push(...out, '');
    } else if (ts.isTypeAliasDeclaration(decl)) {
      const type = typed(
        oneLine(decl.type.getText()),
        referencedSymbols(checker.getTypeAtLocation(decl.type), checker),
      );
      out.push(`\`type ${exported.name} = ${type.text}\`${type.from}`, '');
      sections.Types.push(...out);
    } else if (ts.isFunctionDeclaration(decl)) {
      const signature = checker.getSignatureFromDeclaration(decl)!;
      const sig = typed(
        checker.signatureToString(signature, undefined, ts.TypeFormatFlags.NoTruncation),
        signatureSymbols(signature, checker),
      );
      out.push(`\`${exported.name}${sig.text}\`${sig.from}`, '');
      sections.Functions.push(...out);
    } else if (ts.isVariableDeclaration(decl)) {
      const init =
        decl.initializer && ts.isStringLiteral(decl.initializer) ? ` = ${JSON.stringify(decl.initializer.text)}` : '';
      const type = typed(
        typeOf(symbol, decl).replace(/^readonly /, ''),
        referencedSymbols(checker.getTypeOfSymbolAtLocation(symbol, decl), checker),
      );
      out.push(`\`${exported.name}: ${type.text}${init}\`${type.from}`, '');
      sections.Constants.push(...out);
    }
  }
  const body = Object.entries(sections)
    .filter(([, lines]) => lines.length)
    .map(([title, lines]) => `## ${title}\n\n${lines.join('\n')}`)
    .join('\n');
  // The peer packages' types, once each with the import that names them, so a reader can write the props.
  const packages = [...allForeign.values()]
    .sort((a, b) => a.pkg.localeCompare(b.pkg) || a.name.localeCompare(b.name))
    .map(f => `| \`${f.name}\` | \`${f.pkg}\` | \`${f.importLine}\` |`);
  const fromPackages = packages.length
    ? [
        '## Types from other packages',
        '',
        'Types written `k8s.*` are the Kubernetes API types that `cdk8s-plus-32` generates and exports as the namespace `k8s`.',
        'The others are exported by the package named. All of them are peer dependencies of cdk8s-gpu.',
        '',
        '| Type | Package | Import |',
        '|---|---|---|',
        ...packages,
        '',
        '',
      ].join('\n')
    : '';
  return `# cdk8s-gpu API reference\n\nGenerated from the doc comments by \`npm run docs\` (scripts/api-docs.ts). Do not edit by hand.\n\n${fromPackages}${body.trimEnd()}\n`;
}

if (require.main === module) {
  fs.writeFileSync(API_DOCS, renderApiDocs());
  console.log(`wrote ${path.relative(ROOT, API_DOCS)}`);
}
