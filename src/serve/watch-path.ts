/**
 * Watching a file or a directory for changes, as serve follows its inputs (manifests, and a flow
 * file): a file is watched through its directory, because editors replace files by renaming a
 * new one in, which a watch on the file itself would not see after the first time.
 */
import { existsSync, statSync, watch, type FSWatcher } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Calls `changed` on every event about `path`; undefined when it cannot be watched (`-`, missing). */
export function watchPath(path: string, changed: () => void): FSWatcher | undefined {
  if (path === '-' || !existsSync(path)) return undefined;
  const absolute = resolve(path);
  const directory = statSync(absolute).isDirectory();
  const target = directory ? absolute : dirname(absolute);
  const watcher = watch(target, { recursive: directory }, (_event, name) => {
    if (!directory && name !== null && resolve(target, name.toString()) !== absolute) return;
    changed();
  });
  watcher.on('error', () => undefined);
  return watcher;
}
