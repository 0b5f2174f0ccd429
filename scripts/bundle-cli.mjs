// Bundles the CLI with esbuild into dist/bin/: `palisade.js` (the `palisade` executable) and its
// chunks, `pod-agent.js` (the process the lab starts in each pod's namespace), and the worker
// threads: `encode-worker.js` (the reflector's), `decode-worker.js` (large input files) and
// `realizer-worker.js` (the node agent's). Start-up reads a few files instead of
// resolving ~200 modules one by one, and code splitting keeps each
// command's code (and a heavy dependency it alone uses) in chunks loaded only when that command
// runs: cli/program.ts imports commands dynamically. Every file sits in one directory, so code
// that starts another entry point finds it beside itself (`new URL('./pod-agent.js',
// import.meta.url)`); a new process or worker entry point is one more line in ENTRY_POINTS.
//
// `npm ci` runs this through `prepare`; `node scripts/bundle-cli.mjs [outdir]` bundles elsewhere
// (test/cli/bundle.test.ts bundles into a temporary directory and runs the result).
import process from 'node:process';
import { build } from 'esbuild';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const ENTRY_POINTS = {
  palisade: 'src/cli/main.ts',
  'pod-agent': 'src/lab/pod-agent.ts',
  // The reflector's page encoders: a worker thread runs this file (reflector/encode-pool.ts).
  'encode-worker': 'src/reflector/encode-worker.ts',
  // A large input file's pods, decoded beside the main thread (ingest/decode-offload.ts).
  'decode-worker': 'src/ingest/decode-worker.ts',
  // The node agent's mirror, pipeline and datapath, beside its event loop (agent/worker-realizer.ts).
  'realizer-worker': 'src/agent/realizer-worker.ts',
};

/**
 * Dependencies left out of the bundle and loaded from node_modules when first imported: for
 * packages that cannot be bundled (native addons, files read relative to their own location).
 */
const EXTERNAL = [
  // etcd3 and gRPC read their .proto files relative to their own __dirname (which an ES module
  // bundle does not define): `agent`, `status`, `reflect` and `lab --control-plane` failed with
  // "ReferenceError: __dirname is not defined". One copy of grpc-js for etcd3 and our code.
  'etcd3',
  '@grpc/grpc-js',
  '@grpc/proto-loader',
];

const root = resolve(import.meta.dirname, '..');
const outdir = resolve(process.argv[2] ?? join(root, 'dist', 'bin'));

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ENTRY_POINTS,
  outdir,
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // Bundled CommonJS dependencies (commander) call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __palisadeCreateRequire } from 'node:module';\nconst require = __palisadeCreateRequire(import.meta.url);",
  },
  minifySyntax: true,
  minifyWhitespace: true,
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
});
await chmod(join(outdir, 'palisade.js'), 0o755);

// Before the bundle, the `palisade` bin was dist/cli/main.js. `npx` installs the project into its
// cache once per checkout path and never re-links its bin, so a checkout that ran `npx palisade`
// before still starts dist/cli/main.js, which tsc emits without the executable bit ("sh:
// palisade: Permission denied"). That file forwards to the bundle and is executable.
if (process.argv[2] === undefined) {
  const legacyBin = join(root, 'dist', 'cli', 'main.js');
  await mkdir(join(root, 'dist', 'cli'), { recursive: true });
  await writeFile(legacyBin, "#!/usr/bin/env node\nimport '../bin/palisade.js';\n");
  await chmod(legacyBin, 0o755);
}
