import { describe, expect, it } from 'vitest';
import { familyOf, familyText } from '../../src/cli/task-family.js';
import { record } from '../support/records.js';

describe('tasks show: the tree of a task', () => {
  it('prints the parent and the children with their tools and statuses', () => {
    const parent = record({ taskId: 'p-1' });
    const kids = [
      record({ taskId: 'c-1', toolName: 'square', status: 'completed', parentTaskId: 'p-1' }),
      record({ taskId: 'c-2', toolName: 'square', status: 'working', parentTaskId: 'p-1' }),
    ];
    expect(familyText(familyOf(parent, kids))).toBe('\nchildren    2\n  └ c-1  square  completed\n  └ c-2  square  working');
    expect(familyText(familyOf(kids[0]!, []))).toBe('\nparent      p-1');
    expect(familyText(familyOf(parent, []))).toBe('');
    expect(familyOf(kids[1]!, [])).toEqual({ parentTaskId: 'p-1', children: [] });
  });
});
