// `school completion bash|zsh`: a completion script for the shell (commands, their actions and
// options; file names where a command takes a file). Load it with
// `source <(npx school completion bash)` or put its output in your shell's completion folder.
import { FIXTURES } from './trigger.ts';

export const COMMANDS: Record<string, string[]> = {
  login: [],
  whoami: [],
  logout: [],
  operations: ['watch'],
  events: ['listen'],
  files: ['upload', 'download'],
  imports: ['run'],
  exports: ['create', 'download'],
  plan: [],
  apply: [],
  manifest: ['pull'],
  trigger: Object.keys(FIXTURES),
  logs: ['tail'],
  completion: ['bash', 'zsh'],
};

export const OPTIONS = [
  '--base-url',
  '--api-key',
  '--no-browser',
  '--paste',
  '--json',
  '--types',
  '--forward-to',
  '--secret',
  '--stream',
  '--purpose',
  '--type',
  '--output',
  '--map',
  '--duplicate-policy',
  '--dry-run',
  '--columns',
  '--filters',
  '--status',
  '--since',
  '--help',
];

export function completionScript(shell: string): string | null {
  const actions = Object.entries(COMMANDS)
    .filter(([, a]) => a.length)
    .map(([c, a]) => `      ${c}) words="${a.join(' ')}" ;;`)
    .join('\n');
  const bash = `# school completion (bash): source <(npx school completion bash)
_school() {
  local cur=\${COMP_WORDS[COMP_CWORD]} words=""
  if [[ $cur == -* ]]; then
    COMPREPLY=( $(compgen -W "${OPTIONS.join(' ')}" -- "$cur") ); return
  fi
  if (( COMP_CWORD == 1 )); then
    COMPREPLY=( $(compgen -W "${Object.keys(COMMANDS).join(' ')}" -- "$cur") ); return
  fi
  if (( COMP_CWORD == 2 )); then
    case \${COMP_WORDS[1]} in
${actions}
    esac
    COMPREPLY=( $(compgen -W "$words" -- "$cur") ); return
  fi
  COMPREPLY=( $(compgen -f -- "$cur") )
}
complete -F _school school
`;
  if (shell === 'bash') return bash;
  if (shell === 'zsh')
    return `# school completion (zsh): source <(npx school completion zsh)
autoload -Uz bashcompinit && bashcompinit
${bash}`;
  return null;
}
