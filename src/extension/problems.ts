/**
 * Failed validations in the Problems panel: a pulled file whose validation failed gets one diagnostic, at the line its
 * message names (`line 24`) or else at the block's class, saying the category and the message; a pass clears it.
 */
import * as vscode from 'vscode';
import { splitPulled } from '../core/emit/pulledFile';
import { STALE_WORDS, verdictWords, type VerdictLike } from '../core/pull/pulledState';

export interface Verdict {
  ok: boolean;
  tier?: string | null;
  category?: string | null;
  message?: string | null;
}

/** The 0-based line a failure is about: the last `line N` of its message, else the block's `class NAME`. */
export function problemLine(text: string, message: string | null | undefined, className: string | undefined): number {
  const lines = text.split('\n');
  const named = [...(message ?? '').matchAll(/\bline (\d+)\b/g)]
    .map((m) => Number(m[1]) - 1)
    .filter((n) => n >= 0 && n < lines.length)
    .pop();
  if (named !== undefined) return named;
  const cls = className ? lines.findIndex((l) => l.startsWith(`class ${className}(`) || l.startsWith(`class ${className}:`)) : -1;
  return Math.max(0, cls);
}

export class ValidationProblems implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection('nnrag');
  /** The body each shown verdict was judged on: a verdict of this very body is never replaced by "stale". */
  private readonly judged = new Map<string, string>();

  set(uri: vscode.Uri, text: string, v: Verdict, className?: string): void {
    this.judged.set(uri.toString(), splitPulled(text).body);
    if (v.ok) {
      this.collection.delete(uri);
      return;
    }
    const line = problemLine(text, v.message, className);
    const width = text.split('\n')[line]?.length ?? 0;
    const d = new vscode.Diagnostic(
      new vscode.Range(line, 0, line, width),
      `NN-RAG: ${verdictWords({ status: 'failed', tier: v.tier, category: v.category })}: ${(v.message ?? '').split('\n')[0]}`,
      v.category === 'differs' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error,
    );
    d.source = 'NN-RAG';
    d.code = v.category ?? undefined;
    this.collection.set(uri, [d]);
  }

  /** A verdict on the body before an edit: said as information at the block, until the file is validated again. */
  stale(uri: vscode.Uri, text: string, was: VerdictLike, className?: string): void {
    // (a validation of this body came first: its verdict stays)
    if (this.judged.get(uri.toString()) === splitPulled(text).body) return;
    const line = problemLine(text, undefined, className);
    const d = new vscode.Diagnostic(
      new vscode.Range(line, 0, line, text.split('\n')[line]?.length ?? 0),
      `NN-RAG: ${STALE_WORDS} (was ${verdictWords(was)})`,
      vscode.DiagnosticSeverity.Information,
    );
    d.source = 'NN-RAG';
    d.code = 'stale';
    this.collection.set(uri, [d]);
  }

  clear(uri: vscode.Uri): void {
    this.judged.delete(uri.toString());
    this.collection.delete(uri);
  }

  dispose(): void {
    this.collection.dispose();
  }
}
