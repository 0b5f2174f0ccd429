/**
 * Manifests as the reflector's source (GitOps, the lab, tests): the files are the whole truth —
 * each load is a full list of every reflected kind, reconciled like an API relist (keys of objects
 * no longer in the files are deleted, unchanged objects write nothing). With `watch`, the files
 * are loaded again whenever they change.
 */
import { watch as watchPath, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { loadCluster } from '../ingest/index.ts';
import type { RawApiObject } from '../kube/types.ts';
import type { Diagnostic } from '../model/types.ts';
import { REFLECTED_KINDS } from '../reflected/index.ts';
import type { SourceSink } from './types.ts';

interface FileSourceOptions {
  readonly maxFileBytes?: number;
  /** Diagnostics of every load (located in the files). */
  readonly onDiagnostics: (diagnostics: readonly Diagnostic[]) => void;
  /** After each load: how many objects were read. */
  readonly onLoaded?: (objects: number) => void;
}

/** Loads the files once into `sink` as one full list per kind. */
export async function loadFiles(
  paths: readonly string[],
  sink: SourceSink,
  options: FileSourceOptions,
): Promise<void> {
  const loaded = await loadCluster(
    paths,
    options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {},
  );
  options.onDiagnostics(loaded.diagnostics);
  const byKind = new Map<string, RawApiObject[]>();
  for (const raw of loaded.rawObjects) {
    const value = raw.value as RawApiObject;
    const list = byKind.get(String(value.kind));
    if (list) list.push(value);
    else byKind.set(String(value.kind), [value]);
  }
  for (const { kind } of REFLECTED_KINDS) {
    const stream = { kind };
    sink.listStart(stream);
    sink.listObjects(stream, byKind.get(kind) ?? []);
    sink.listDone(stream, '');
  }
  options.onLoaded?.(loaded.rawObjects.length);
}

/** Loads the files now and again after every change (debounced) until the returned stop() is called. */
export async function watchFiles(
  paths: readonly string[],
  sink: SourceSink,
  options: FileSourceOptions & { readonly debounceMs?: number; readonly onError?: (error: Error) => void },
): Promise<() => void> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const reload = (): void => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      running = running
        .then(() => loadFiles(paths, sink, options))
        .catch((error: unknown) =>
          options.onError?.(error instanceof Error ? error : new Error(String(error))),
        );
    }, options.debounceMs ?? 100);
  };
  const watchers: FSWatcher[] = [];
  const stop = (): void => {
    if (timer) clearTimeout(timer);
    for (const w of watchers) w.close();
  };
  // Watch before the first load, not after it: a file replaced while it is being read is then
  // read again once that load ends. Watching after the load lost such a change until the next
  // one (a reflector taking over leadership in the middle of a burst of edits kept the state of
  // the edit before the last).
  for (const path of paths) {
    if (path === '-') continue;
    const isDirectory = (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
    try {
      if (isDirectory) {
        watchers.push(watchPath(path, { recursive: true }, reload));
      } else {
        // A file's directory: editors save by writing a new file and renaming it over the old one.
        const name = basename(path);
        watchers.push(watchPath(dirname(path), (_event, changed) => changed === name && reload()));
      }
    } catch {
      // Nothing to watch there (no such directory): the load below reports the path.
    }
  }
  const first = loadFiles(paths, sink, options);
  running = first.catch(() => undefined);
  try {
    await first;
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}
