/**
 * Files a directory of manifests often holds that are not Kubernetes objects: a Helm chart's
 * metadata and values, a Node or TypeScript project's files, dependency folders. Found by
 * walking a directory, they are skipped with an info rather than reported as broken manifests
 * (given by name on the command line, they are read like any file).
 */

/** Why a file found in a directory is not read as manifests, or undefined to read it. */
export function notManifestReason(name: string): string | undefined {
  if (name === 'Chart.yaml' || name === 'Chart.yml' || name === 'requirements.yaml')
    return "a Helm chart's metadata";
  if (/^values([-.][^/]*)?\.ya?ml$/.test(name)) return "a Helm chart's values";
  if (name === 'package.json' || name === 'package-lock.json' || name === 'npm-shrinkwrap.json')
    return "a Node.js project's package file";
  if (/^tsconfig(\..*)?\.json$/.test(name) || name === 'jsconfig.json') return 'a TypeScript configuration';
  if (name === 'composer.json' || name === 'renovate.json' || name === '.eslintrc.json')
    return "a tool's configuration";
  return undefined;
}

/** Folders never searched for manifests (other projects' code). */
export function skippedDirectory(name: string): boolean {
  return name === 'node_modules' || name === 'vendor';
}

/**
 * Go template actions (`{{ .Values.x }}`, `{{- include "x" . }}`, `{{ end }}`): a Helm template
 * or another unrendered template, which is not YAML until rendered.
 */
const TEMPLATE_ACTION =
  /\{\{-?\s*(?:\.|\$|include\b|if\b|else\b|end\b|range\b|with\b|template\b|define\b|toYaml\b|tpl\b|required\b|default\b|quote\b|printf\b|\/\*)/g;

/**
 * Offset of the first template action standing where YAML structure would be (not inside a
 * quoted string on its line: `image: "{{ .Values.image }}"` is a string to YAML), or -1.
 */
export function templateActionAt(text: string): number {
  TEMPLATE_ACTION.lastIndex = 0;
  for (let match = TEMPLATE_ACTION.exec(text); match; match = TEMPLATE_ACTION.exec(text)) {
    const lineStart = text.lastIndexOf('\n', match.index - 1) + 1;
    const before = text.slice(lineStart, match.index);
    const quotes = (before.match(/"/g)?.length ?? 0) + (before.match(/'/g)?.length ?? 0);
    if (quotes % 2 === 0) return match.index;
  }
  return -1;
}
