/**
 * A `serve` of a copy of an example in a temp dir (so tests can edit it), and headless
 * Chromium for the page tests — both removed after the test, even when it fails.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCluster } from '../../src/ingest/index.ts';
import { startServer, type RunningServer } from '../../src/serve/index.ts';

export { CHROMIUM_MISSING, launchChromium } from '../helpers/chromium.ts';

export interface Served {
  readonly server: RunningServer;
  /** The copy of the input being served. */
  readonly dir: string;
  /** The copy of the --against input, when one was given. */
  readonly againstDir?: string;
  close(): Promise<void>;
}

const read = (paths: string[]) => () =>
  loadCluster(paths, { semantics: 'v1', maxFileBytes: 128 << 20, readStdin: () => Promise.resolve('') });

/**
 * Serves a copy of `example` (and of `against`, with the files of `againstOverlay` copied over
 * it) on a free loopback port.
 */
export async function serveCopy(example: string, against?: string, againstOverlay?: string): Promise<Served> {
  const root = mkdtempSync(join(tmpdir(), `palisade-serve-${process.pid}-`));
  const dir = join(root, 'input');
  cpSync(example, dir, { recursive: true });
  let againstDir: string | undefined;
  if (against) {
    againstDir = join(root, 'against');
    cpSync(against, againstDir, { recursive: true });
    if (againstOverlay) cpSync(againstOverlay, againstDir, { recursive: true });
  }
  try {
    const server = await startServer({
      read: read([dir]),
      ...(againstDir ? { readAgainst: read([againstDir]) } : {}),
      watch: [dir, ...(againstDir ? [againstDir] : [])],
      semantics: 'v1',
      address: '127.0.0.1',
      port: 0,
    });
    return {
      server,
      dir,
      ...(againstDir ? { againstDir } : {}),
      close: async () => {
        await server.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}
