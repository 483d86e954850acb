#!/usr/bin/env python3
# Lists the configuration keys arc-reactor defines under arc.reactor, for
# autoconfig/arcreactor_keys.txt (keep that file's header, replace the
# keys):
#
#   git clone https://github.com/StarkFactory/arc-reactor /tmp/arc-reactor
#   python3 scripts/arc-reactor-keys.py /tmp/arc-reactor > /tmp/keys.txt
#
# It reads the properties classes bound under arc.reactor, .admin, .slack
# and .slack.tools (data-class parameters in kebab-case; Map properties
# become "prefix.*"), @ConditionalOnProperty names, ${arc.reactor.…} and
# getProperty("arc.reactor.…") references, and the keys of arc-reactor's
# own YAML files. Needs PyYAML.
import re, os, sys, glob
root = sys.argv[1].rstrip('/') if len(sys.argv) > 1 else 'src'
kt = [p for p in glob.glob(root+'/**/src/main/**/*.kt', recursive=True)]
text = {p: open(p, encoding='utf-8').read() for p in kt}
def kebab(s): return re.sub(r'(?<=[a-z0-9])([A-Z])', r'-\1', s).lower()
# data classes: name -> list of (prop, type)
classes = {}
for p, t in text.items():
    for m in re.finditer(r'(?:data\s+)?class\s+(\w+)\s*(?:@\w+\s*)?(?:constructor\s*)?\(', t):
        name = m.group(1); i = m.end(); depth = 1; j = i
        while j < len(t) and depth:
            c = t[j]
            if c in '([{<': depth += 1 if c in '([' else 0
            if c in ')]': depth -= 1
            j += 1
        body = t[i:j-1]
        body = re.sub(r'/\*.*?\*/', '', body, flags=re.S)
        body = re.sub(r'//[^\n]*', '', body)
        props = []
        for pm in re.finditer(r'\b(?:val|var)\s+(\w+)\s*:\s*([\w.<>?, ]+?)\s*(?:=|,|$)', body, flags=re.M):
            props.append((pm.group(1), pm.group(2).strip()))
        if props: classes.setdefault(name, []).append((p, props))
keys = set(); wild = set()
def resolve(name, fromfile):
    cands = classes.get(name, [])
    if not cands: return None
    for f, props in cands:
        if f == fromfile: return (f, props)
    d = os.path.dirname(fromfile)
    for f, props in cands:
        if os.path.dirname(f) == d: return (f, props)
    return cands[0]
def walk(cls, prefix, seen, fromfile):
    r = resolve(cls, fromfile)
    if r is None: return
    f, props = r
    for prop, typ in props:
        k = prefix + '.' + kebab(prop)
        base = typ.rstrip('?').strip()
        if base.startswith('Map<') or base.startswith('MutableMap<'):
            wild.add(k); continue
        if base in classes and (base, f) not in seen:
            walk(base, k, seen | {(base, f)}, f); continue
        keys.add(k)
roots = {'AgentProperties':'arc.reactor','AdminProperties':'arc.reactor.admin','SlackProperties':'arc.reactor.slack','SlackToolsProperties':'arc.reactor.slack.tools'}
rootfiles = {'AgentProperties':'arc-core/src/main/kotlin/com/arc/reactor/agent/config/AgentProperties.kt','AdminProperties':'arc-admin/src/main/kotlin/com/arc/reactor/admin/config/AdminProperties.kt','SlackProperties':'arc-slack/src/main/kotlin/com/arc/reactor/slack/config/SlackProperties.kt','SlackToolsProperties':'arc-slack/src/main/kotlin/com/arc/reactor/slack/tools/config/SlackToolsProperties.kt'}
for c, pre in roots.items():
    walk(c, pre, set(), root + '/' + rootfiles[c])
# @ConditionalOnProperty and @Value and literals
for p, t in text.items():
    for m in re.finditer(r'ConditionalOnProperty\s*\((.*?)\)\s*\n', t, flags=re.S):
        a = m.group(1)
        pre = re.search(r'prefix\s*=\s*"([^"]+)"', a)
        names = re.search(r'(?:name|value)\s*=\s*(\[[^\]]*\]|"[^"]*")', a)
        if names:
            ns = re.findall(r'"([^"]+)"', names.group(1))
            for n in ns:
                k = (pre.group(1)+'.'+n) if pre else n
                if k.startswith('arc.reactor.'): keys.add(k)
    for m in re.finditer(r'\$\{(arc\.reactor\.[a-zA-Z0-9.\-]+)', t): keys.add(m.group(1))
    for m in re.finditer(r'getProperty\w*\(\s*"(arc\.reactor\.[a-zA-Z0-9.\-]+)"', t): keys.add(m.group(1))
# yml files
import yaml
def flat(d, pre):
    if isinstance(d, dict):
        for k, v in d.items():
            kk = f'{pre}.{k}' if pre else str(k)
            if isinstance(v, dict) and v: yield from flat(v, kk)
            else: yield kk
ymls = glob.glob(root+'/**/*.yml', recursive=True) + glob.glob(root+'/**/*.yaml', recursive=True) + [root+'/application.yml.example']
for y in ymls:
    if '/.github/' in y or 'helm' in y or 'docker' in y: continue
    try:
        for doc in yaml.safe_load_all(open(y, encoding='utf-8')):
            for k in flat(doc, ''):
                if k.startswith('arc.reactor.'): keys.add(k)
    except Exception as e: print('skip', y, e, file=sys.stderr)
keys = {k for k in keys if not k.endswith('.') and not k.startswith('arc.reactor.eval.')}
for k in sorted(keys): print(k)
for w in sorted(wild): print(w + '.*')
