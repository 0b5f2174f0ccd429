/**
 * Name rules as the API server applies them (apimachinery's validation package): DNS labels and
 * subdomains for names, qualified names for label keys, label values, and IANA service names for
 * named ports. Each returns a reason when the value is invalid, or undefined.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

export function dnsLabelProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!DNS1123_LABEL.test(value)) {
    return "must consist of lower case alphanumeric characters or '-', and start and end with an alphanumeric character";
  }
  return undefined;
}

export function dnsSubdomainProblem(value: string): string | undefined {
  if (value.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return "must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character";
  }
  return undefined;
}

export function labelKeyProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return "a label key may contain at most one '/'";
  const name = parts[parts.length - 1] ?? '';
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    if (prefix === '') return 'the prefix before / must not be empty';
    const problem = dnsSubdomainProblem(prefix);
    if (problem) return `prefix ${problem}`;
  }
  if (name === '') return 'the name part must not be empty';
  if (name.length > 63) return 'the name part must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(name)) {
    return "the name part must consist of alphanumeric characters, '-', '_' or '.', and start and end with an alphanumeric character";
  }
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(value)) {
    return "must consist of alphanumeric characters, '-', '_' or '.', and start and end with an alphanumeric character";
  }
  return undefined;
}

/** IANA_SVC_NAME (RFC 6335): what a named port must be. */
export function portNameProblem(name: string): string | undefined {
  if (name.length > 15) return 'must be no more than 15 characters';
  if (!/^[a-z0-9-]+$/.test(name)) return "must contain only lower-case alphanumeric characters and '-'";
  if (!/[a-z]/.test(name)) return 'must contain at least one letter';
  if (name.startsWith('-') || name.endsWith('-')) return "must not begin or end with '-'";
  if (name.includes('--')) return "must not contain consecutive '-'";
  return undefined;
}
