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
  const mods = ts.canHaveModifiers(decl) ? ts.getModifiers(decl) ?? [] : [];
  return !mods.some(m => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword)
    && !(ts.isPropertyDeclaration(decl) || ts.isMethodDeclaration(decl) ? ts.isPrivateIdentifier(decl.name) : false);
}

export function renderApiDocs(): string {
  const program = ts.createProgram([path.join(ROOT, 'src', 'index.ts')], { strict: true, target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS, skipLibCheck: true, types: ['node'] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(ROOT, 'src', 'index.ts'))!;
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
  const doc = (s: ts.Symbol) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim();
  const typeOf = (s: ts.Symbol, at: ts.Node) => checker.typeToString(checker.getTypeOfSymbolAtLocation(s, at), undefined, ts.TypeFormatFlags.NoTruncation);

  const sections: Record<string, string[]> = { Classes: [], Interfaces: [], Enums: [], Types: [], Functions: [], Constants: [] };
  for (const exported of [...exports].sort((a, b) => a.name.localeCompare(b.name))) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const decl = symbol.declarations?.[0];
    if (!decl) continue;
    const out: string[] = [`### ${exported.name}`, ''];
    if (doc(symbol)) out.push(doc(symbol), '');

    if (ts.isClassDeclaration(decl)) {
      const rows: string[] = [];
      for (const member of [...checker.getPropertiesOfType(checker.getTypeOfSymbolAtLocation(symbol, decl)), ...checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))]) {
        const m = member.declarations?.[0];
        if (!m || isHidden(member, checker) || !isPublic(m) || member.name === 'prototype' || m.parent !== decl) continue;
        const isStatic = ts.canHaveModifiers(m) && (ts.getModifiers(m) ?? []).some(x => x.kind === ts.SyntaxKind.StaticKeyword);
        const sig = ts.isMethodDeclaration(m) ? checker.signatureToString(checker.getSignatureFromDeclaration(m)!, undefined, ts.TypeFormatFlags.NoTruncation) : `: ${typeOf(member, m)}`;
        rows.push(`| \`${isStatic ? `${exported.name}.` : ''}${member.name}${cell(sig)}\` | ${cell(doc(member))} |`);
      }
      const ctor = decl.members.find(ts.isConstructorDeclaration);
      if (ctor && isPublic(ctor)) out.push(`\`new ${exported.name}${checker.signatureToString(checker.getSignatureFromDeclaration(ctor)!)}\``, '');
      if (rows.length) out.push('| Member | Description |', '|---|---|', ...rows, '');
      sections.Classes.push(...out);
    } else if (ts.isInterfaceDeclaration(decl)) {
      const rows = checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))
        .filter(p => !isHidden(p, checker))
        .map(p => {
          const pd = p.declarations![0];
          const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
          const def = tag(p, 'default', checker);
          return `| \`${p.name}${optional ? '?' : ''}\` | \`${cell(typeOf(p, pd)).replace(/ \| undefined$/, '')}\` | ${def ? cell(def) : optional ? '' : 'required'} | ${cell(doc(p))} |`;
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
      out.push(`\`type ${exported.name} = ${oneLine(decl.type.getText())}\``, '');
      sections.Types.push(...out);
    } else if (ts.isFunctionDeclaration(decl)) {
      out.push(`\`${exported.name}${checker.signatureToString(checker.getSignatureFromDeclaration(decl)!, undefined, ts.TypeFormatFlags.NoTruncation)}\``, '');
      sections.Functions.push(...out);
    } else if (ts.isVariableDeclaration(decl)) {
      const init = decl.initializer && ts.isStringLiteral(decl.initializer) ? ` = ${JSON.stringify(decl.initializer.text)}` : '';
      out.push(`\`${exported.name}: ${typeOf(symbol, decl).replace(/^readonly /, '')}${init}\``, '');
      sections.Constants.push(...out);
    }
  }
  const body = Object.entries(sections).filter(([, lines]) => lines.length).map(([title, lines]) => `## ${title}\n\n${lines.join('\n')}`).join('\n');
  return `# cdk8s-gpu API reference\n\nGenerated from the doc comments by \`npm run docs\` (scripts/api-docs.ts). Do not edit by hand.\n\n${body.trimEnd()}\n`;
}

if (require.main === module) {
  fs.writeFileSync(API_DOCS, renderApiDocs());
  console.log(`wrote ${path.relative(ROOT, API_DOCS)}`);
}
