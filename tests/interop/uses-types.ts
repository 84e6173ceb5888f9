// Compiled (never run) by tests/e2e/test_e2e_interop.py with `tsc --strict`: the generated
// declarations type-check, and say what a bot relies on.
import type {
  CommandOutcome, CommandResult, CreateMemory, InvalidCommandResult, LookupResult, ManualResult, MemoryEvictionMetric,
  MemorySaved, NoticePlan,
} from '../../contracts/types/index';

export const create: CreateMemory = {
  command_id: 'c-1', issued_at: '2026-01-01T00:00:00Z', workspace_id: '1', reply_to: '_INBOX.x',
  tool_args: { memory_content: '{user} likes tea', memory_scope: 'server_wide' },
  persona: { id: 1, lineage_id: 1, name: 'Tomori' }, bot_user_id: '2', channel: { id: '3' },
};

export function nextStep(o: CommandOutcome): 'use' | 'wait' | 'give up' | 'resend' {
  switch (o.outcome) {
    case 'processed': return 'use';
    case 'queued': return 'wait';
    case 'dead_lettered':
      return o.dead_letter?.reason === 'invalid_command' || o.dead_letter?.reason === 'unsupported_command' ? 'give up' : 'resend';
    case 'unknown': return 'resend';
  }
}

export function savedTitle(r: CommandResult | InvalidCommandResult, n: NoticePlan | null | undefined): string | undefined {
  return r.data.status === 'memory_saved_with_eviction' ? n?.conversation?.title : undefined;
}

export const stored: LookupResult = null;
export const metric: MemoryEvictionMetric = { scope: 'server', decay_days: 30 };
export const added = (r: ManualResult) => r.data.status === 'added' ? r.data.memory_id : undefined;
export const owner = (e: MemorySaved) => `${e.scope}:${e.owner_id}`;
