/**
 * Port sets as people read them: the ranges allowed, or — when a set allows nearly everything and
 * its list of ranges is long — what it leaves out (`all but TCP 22, 3306`). A policy that allows
 * every port but a few, intersected with others, can be hundreds of ranges; its complement is a
 * handful. Machine outputs (JSON, CSV) keep the ranges.
 */
import { ALL_PORTS, formatPortSet, subtractPorts, type PortSet } from '../../model/port-set.ts';

/** Lists shorter than this are printed as they are (the complement is never shorter in practice). */
const SHORT = 48;

export function portListText(ports: PortSet): string {
  const direct = formatPortSet(ports);
  if (direct.length <= SHORT) return direct;
  const complement = `all but ${formatPortSet(subtractPorts(ALL_PORTS, ports))}`;
  return complement.length < direct.length ? complement : direct;
}
