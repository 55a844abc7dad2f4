/** Types of heap-snapshot.mjs: a V8 heap snapshot read into flat arrays, with dominators. */
export interface HeapGraph {
  path: string;
  count: number;
  id: Float64Array;
  self: Float64Array;
  /** Immediate dominator by ordinal (the root, 0, its own); -1 for a node no root reaches. */
  idom: Int32Array;
  retained: Float64Array;
  /** Reachable ordinals, every dominator before what it dominates. */
  topDown: Uint32Array;
  typeName(i: number): string;
  name(i: number): string;
}
export function groupOf(type: string): string;
export function readSnapshot(path: string): HeapGraph;
export function label(g: HeapGraph, i: number): string;
export function describe(g: HeapGraph, i: number, depth?: number): string;
