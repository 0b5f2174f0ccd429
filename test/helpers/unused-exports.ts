/**
 * Finds the exports of src/ that nothing else uses: dead code, or a name exported that only its
 * own file needs. An export is used when code in another file of src/, test/, bench/, web/ or
 * scripts/ refers to it (found by the TypeScript checker, through imports, re-exports and
 * `import()`), or when the package's entry (src/index.ts) exports it — that is public API. A
 * re-export alone (a layer's index.ts passing a name on) is not a use. Names looked up at run
 * time by string cannot be seen: they go in the test's allow-list, with why.
 *
 * Run alone, it prints what it finds: `node --import tsx test/helpers/unused-exports.ts`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(import.meta.dirname, '..', '..');
const SCANNED = ['src', 'test', 'bench', 'web', 'scripts'];
const SOURCE = /\.(ts|mts|mjs|js)$/;
/** The package's entry (package.json `main`): what it exports is public. */
const PUBLIC_ENTRY = 'src/index.ts';

export interface UnusedExport {
  /** `src/x/y.ts:12`. */
  readonly where: string;
  readonly name: string;
  /** `unused`: referenced nowhere, dead; `local`: used only in its own file, need not be exported. */
  readonly kind: 'unused' | 'local';
}

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(path));
    else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

/** The declaration an identifier finally names, through import and export aliases. */
function target(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** Identifiers that only pass a name on: an import's or re-export's own names. */
function isPassingOn(node: ts.Identifier): boolean {
  const parent = node.parent;
  return (
    ts.isImportSpecifier(parent) ||
    ts.isImportClause(parent) ||
    ts.isNamespaceImport(parent) ||
    ts.isExportSpecifier(parent) ||
    ts.isNamespaceExport(parent)
  );
}

/**
 * What an identifier refers to. A name destructured from an object (`const { f } = await
 * import('./m.ts')`) refers to the object's property — the module's export — not to the local
 * variable the checker would name.
 */
function symbolAt(checker: ts.TypeChecker, node: ts.Identifier): ts.Symbol | undefined {
  const parent = node.parent;
  if (ts.isBindingElement(parent) && ts.isObjectBindingPattern(parent.parent)) {
    const key = parent.propertyName ?? parent.name;
    if (key === node || (parent.propertyName === undefined && parent.name === node))
      return checker.getTypeAtLocation(parent.parent).getProperty(node.text);
  }
  return checker.getSymbolAtLocation(node);
}

export function findUnusedExports(root = ROOT): UnusedExport[] {
  const files = SCANNED.flatMap((dir) => sourceFiles(join(root, dir)));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    allowJs: true,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
    noEmit: true,
    skipLibCheck: true,
    strict: true,
  };
  const host = ts.createCompilerHost(options);
  // Scripts import the build (`../dist/x/y.js`): that is the source's `src/x/y.ts`.
  host.resolveModuleNames = (specifiers, containing) =>
    specifiers.map((specifier) => {
      const built = /^(.*\/)dist\/(.*)\.js$/.exec(join(dirname(containing), specifier));
      const source = built && `${built[1]}src/${built[2]}.ts`;
      if (source && existsSync(source)) return { resolvedFileName: source, extension: ts.Extension.Ts };
      return ts.resolveModuleName(specifier, containing, options, host).resolvedModule;
    });
  const program = ts.createProgram(files, options, host);
  const checker = program.getTypeChecker();
  const ours = program.getSourceFiles().filter((f) => !f.isDeclarationFile && f.fileName.startsWith(root));
  const name = (file: ts.SourceFile): string => relative(root, file.fileName);

  // Every export declared in a file of src/ (not re-exported from elsewhere), by its symbol.
  const exported = new Map<ts.Symbol, { file: string; name: string; line: number }>();
  for (const file of ours) {
    const path = name(file);
    if (!path.startsWith('src/') || path.endsWith('.test.ts')) continue;
    const module = checker.getSymbolAtLocation(file);
    if (!module) continue;
    for (const symbol of checker.getExportsOfModule(module)) {
      const declared = target(checker, symbol);
      const declaration = declared.declarations?.[0];
      if (!declaration || declaration.getSourceFile() !== file) continue;
      const { line } = file.getLineAndCharacterOfPosition(declaration.getStart());
      exported.set(declared, { file: path, name: symbol.name, line: line + 1 });
    }
  }
  const names = new Set([...exported.values()].map((e) => e.name));

  const usedElsewhere = new Set<ts.Symbol>();
  const usedAtHome = new Set<ts.Symbol>();
  const entry = ours.find((f) => name(f) === PUBLIC_ENTRY);
  const entryModule = entry && checker.getSymbolAtLocation(entry);
  if (entryModule)
    for (const symbol of checker.getExportsOfModule(entryModule)) usedElsewhere.add(target(checker, symbol));
  for (const file of ours) {
    const path = name(file);
    const visit = (node: ts.Node): void => {
      // Only names some export has are resolved: the checker's work stays small.
      if (ts.isIdentifier(node) && names.has(node.text) && !isPassingOn(node)) {
        const symbol = symbolAt(checker, node);
        const declared = symbol && target(checker, symbol);
        const home = declared && exported.get(declared);
        if (home && declared) {
          const isDeclarationName = declared.declarations?.some(
            (d) => (d as ts.NamedDeclaration).name === node,
          );
          if (home.file !== path) usedElsewhere.add(declared);
          else if (!isDeclarationName) usedAtHome.add(declared);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }

  const unused: UnusedExport[] = [];
  for (const [symbol, home] of exported) {
    if (usedElsewhere.has(symbol)) continue;
    unused.push({
      where: `${home.file}:${home.line}`,
      name: home.name,
      kind: usedAtHome.has(symbol) ? 'local' : 'unused',
    });
  }
  return unused.sort((a, b) => a.where.localeCompare(b.where, 'en', { numeric: true }));
}

if (process.argv[1] === import.meta.filename) {
  const found = findUnusedExports();
  for (const e of found) console.log(`${e.where}  ${e.name}  (${e.kind})`);
  console.log(`${found.length} exports of src/ used by no other file`);
}
