/**
 * A private certificate authority for an etcd that Palisade starts itself (the lab, tests): a CA,
 * etcd's server certificate (for loopback and unix sockets: `localhost`, 127.0.0.1, ::1) and one
 * client certificate per identity, whose CN is the etcd user it acts as under
 * `--client-cert-auth`. Made with `openssl` (P-256 keys: fast to make), keys mode 0600 in a 0700
 * directory. The CA's key is deleted once every certificate is issued, so nothing can mint
 * another identity afterwards.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdAccessError } from './errors.ts';

/** A certificate and its key (PEM files). */
interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** What `issueCertificates` made. */
export interface EtcdPki {
  readonly dir: string;
  /** The CA every certificate here is signed by (etcd's --trusted-ca-file, clients' --cacert). */
  readonly caFile: string;
  /** etcd's own certificate (serving clients, and its peer port). */
  readonly server: CertificateFiles;
  /** The client certificate of an identity issued here (its CN is `name`). */
  client(name: string): CertificateFiles;
}

/** Where an identity's files are under `dir` (issued or not). */
export function pkiFiles(dir: string): Omit<EtcdPki, 'dir'> {
  const pair = (name: string): CertificateFiles => ({
    certFile: join(dir, `${name}.crt`),
    keyFile: join(dir, `${name}.key`),
  });
  return { caFile: join(dir, 'ca.crt'), server: pair('server'), client: pair };
}

/** Issues a CA, etcd's server certificate and one client certificate per name into `dir`. */
export function issueCertificates(dir: string, clients: readonly string[]): EtcdPki {
  for (const name of clients)
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name === 'server' || name === 'ca')
      throw new EtcdAccessError(`"${name}" cannot name a client certificate (letters, digits, . _ -)`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const files = pkiFiles(dir);
  const caKey = join(dir, 'ca.key');
  try {
    openssl(dir, [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', caKey, '-out', files.caFile, '-days', '3650', '-subj', '/CN=palisade-etcd-ca',
    ]); // prettier-ignore
    issue(dir, caKey, files.caFile, 'server', 'etcd', [
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      // Its peer port asks for a client certificate too: the same one serves both ends.
      'extendedKeyUsage=serverAuth,clientAuth',
    ]);
    for (const name of clients) issue(dir, caKey, files.caFile, name, name, ['extendedKeyUsage=clientAuth']);
  } finally {
    rmSync(caKey, { force: true });
  }
  return { dir, ...files };
}

function issue(
  dir: string,
  caKey: string,
  caFile: string,
  file: string,
  commonName: string,
  extensions: readonly string[],
): void {
  const { certFile, keyFile } = pkiFiles(dir).client(file);
  const [request, extfile] = [join(dir, `${file}.csr`), join(dir, `${file}.ext`)];
  writeFileSync(extfile, ['basicConstraints=CA:FALSE', ...extensions].join('\n') + '\n');
  try {
    openssl(dir, [
      'req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', request, '-subj', `/CN=${commonName}`,
    ]); // prettier-ignore
    openssl(dir, [
      'x509', '-req', '-in', request, '-CA', caFile, '-CAkey', caKey, '-set_serial',
      `0x${randomSerial()}`, '-days', '3650', '-out', certFile, '-extfile', extfile,
    ]); // prettier-ignore
    chmodSync(keyFile, 0o600);
  } finally {
    rmSync(request, { force: true });
    rmSync(extfile, { force: true });
  }
}

/** Serials must differ between certificates of one CA; random ones need no serial file. */
const randomSerial = (): string => randomBytes(12).toString('hex');

function openssl(cwd: string, args: readonly string[]): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new EtcdAccessError('openssl is not installed (apt-get install openssl)');
    const said = e.stderr?.toString().trim().split('\n')[0] ?? e.message;
    throw new EtcdAccessError(`openssl ${args[0]} failed: ${said}`);
  }
}
