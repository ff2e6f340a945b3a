// A pod's fsGroup applied to a volume it mounts, as the kubelet's SetVolumeOwnership does: every entry is
// given the group (symlinks themselves, never what they point at), and regular files and directories gain
// group read (and write unless the volume is read-only); directories also gain group search and setgid so
// files made in them later keep the group.
import fs from 'node:fs';
import path from 'node:path';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** The mode a file or directory of mode `mode` gets under an fsGroup. */
export function fsGroupMode(mode: number, isDir: boolean, readOnly: boolean): number {
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (isDir) mask |= SETGID | EXEC_MASK;
  return (mode & 0o7777) | mask;
}

/** Gives `dir` and everything under it (not following symlinks) to `fsGroup`. */
export function setVolumeOwnership(dir: string, fsGroup: number, readOnly: boolean): void {
  const visit = (p: string): void => {
    const st = fs.lstatSync(p);
    fs.lchownSync(p, st.uid, fsGroup);
    if (st.isSymbolicLink()) return;
    fs.chmodSync(p, fsGroupMode(st.mode, st.isDirectory(), readOnly));
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) visit(path.join(p, name));
  };
  visit(dir);
}
