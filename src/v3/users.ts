// Placeholder until the users/tags work lands.
import { AppError } from '../errors.ts';
import type { Handlers } from './types.ts';
import type { ResourceDeps } from './deps.ts';

type UserOps =
  | 'listUsers'
  | 'createUser'
  | 'getUser'
  | 'updateUser'
  | 'deleteUser'
  | 'listUserTags'
  | 'addUserTag'
  | 'removeUserTag';
type TagOps = 'listTags' | 'createTag' | 'getTag' | 'updateTag' | 'deleteTag';

const todo = async (): Promise<never> => {
  throw new AppError('operation_not_catalogued');
};

export function userHandlers(_deps: ResourceDeps): Pick<Handlers, UserOps | TagOps> {
  return {
    listUsers: todo,
    createUser: todo,
    getUser: todo,
    updateUser: todo,
    deleteUser: todo,
    listUserTags: todo,
    addUserTag: todo,
    removeUserTag: todo,
    listTags: todo,
    createTag: todo,
    getTag: todo,
    updateTag: todo,
    deleteTag: todo,
  };
}
