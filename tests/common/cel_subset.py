# SPDX-License-Identifier: Apache-2.0
"""A small evaluator for the subset of CEL (the Common Expression Language the API server
evaluates ValidatingAdmissionPolicies in) that deploy/admissionpolicy.yaml uses, so that a test
can run the policy's expressions on objects.  No CEL implementation is packaged for Debian
bookworm and the stand-in API server has no admission policies, so this is the closest check
available here; it is NOT the API server's cel-go, and says so where it differs.

Supported: null, true, false, integers, double-quoted strings (with backslash escapes), list
and map literals; identifiers; `a.b` member access; `a[i]`; `has(a.b)`; the macros
`l.map(x, e)`, `l.filter(x, e)`, `l.all(x, e)`, `l.exists(x, e)` on lists and (keys) maps;
`s.startsWith(t)`, `size(x)`; `!`, `-` (unary), `&&`, `||`, `==`, `!=`, `<`, `<=`, `>`, `>=`,
`in`, `? :` and parentheses.

Semantics kept from CEL (the ones the policy relies on):
- selecting a field an object does not have is an error ("no such key"), as for the API
  server's typed objects; has() tests presence without that error;
- `&&` and `||` are commutative about errors: `false && error` is false, `true || error` is
  true, whichever side the error is on; otherwise the error propagates;
- equality is deep (lists, maps) and never between different kinds (1 == "1" is false; cel-go
  refuses some such comparisons at type-check time, which this does not model);
- a validation that errors counts as failed (the policy's failurePolicy is Fail).
"""

import re

TOKEN = re.compile(r'''
    (?P<ws>\s+)
  | (?P<num>\d+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<op>&&|\|\||==|!=|<=|>=|[!<>?:.,()\[\]{}-])
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
''', re.X)


class CelError(Exception):
    pass


def tokenize(src):
    out, pos = [], 0
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m:
            raise CelError("bad character %r at %d" % (src[pos], pos))
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        text = m.group(kind)
        if kind == "id" and text == "in":
            kind = "op"
        out.append((kind, text))
    out.append(("end", ""))
    return out


class Parser:
    """Pratt parser into nested tuples."""

    def __init__(self, src):
        self.t = tokenize(src)
        self.i = 0

    def peek(self):
        return self.t[self.i]

    def take(self, text=None):
        tok = self.t[self.i]
        if text is not None and tok[1] != text:
            raise CelError("expected %r, found %r" % (text, tok[1]))
        self.i += 1
        return tok

    def parse(self):
        e = self.expr()
        if self.peek()[0] != "end":
            raise CelError("unexpected %r" % self.peek()[1])
        return e

    def expr(self):
        c = self.binary(0)
        if self.peek()[1] == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return ("cond", c, a, b)
        return c

    PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "in": 3}

    def binary(self, min_prec):
        left = self.unary()
        while True:
            op = self.peek()[1]
            p = self.PREC.get(op) if self.peek()[0] == "op" else None
            if p is None or p < min_prec:
                return left
            self.take()
            right = self.binary(p + 1)
            left = ("bin", op, left, right)

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return ("not", self.unary())
        if self.peek()[1] == "-":
            self.take()
            return ("neg", self.unary())
        return self.postfix(self.primary())

    def args(self):
        self.take("(")
        out = []
        if self.peek()[1] != ")":
            out.append(self.expr())
            while self.peek()[1] == ",":
                self.take(",")
                out.append(self.expr())
        self.take(")")
        return out

    def postfix(self, e):
        while True:
            t = self.peek()[1]
            if t == ".":
                self.take(".")
                name = self.take()[1]
                if self.peek()[1] == "(":
                    e = ("call", name, e, self.args())
                else:
                    e = ("sel", e, name)
            elif t == "[":
                self.take("[")
                idx = self.expr()
                self.take("]")
                e = ("idx", e, idx)
            else:
                return e

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            return ("lit", int(text))
        if kind == "str":
            return ("lit", bytes(text[1:-1], "utf-8").decode("unicode_escape"))
        if kind == "id":
            if text in ("true", "false", "null"):
                return ("lit", {"true": True, "false": False, "null": None}[text])
            if self.peek()[1] == "(":
                return ("call", text, None, self.args())
            return ("id", text)
        if text == "(":
            e = self.expr()
            self.take(")")
            return e
        if text == "[":
            items = []
            if self.peek()[1] != "]":
                items.append(self.expr())
                while self.peek()[1] == ",":
                    self.take(",")
                    items.append(self.expr())
            self.take("]")
            return ("list", items)
        if text == "{":
            pairs = []
            if self.peek()[1] != "}":
                while True:
                    k = self.expr()
                    self.take(":")
                    pairs.append((k, self.expr()))
                    if self.peek()[1] != ",":
                        break
                    self.take(",")
            self.take("}")
            return ("map", pairs)
        raise CelError("unexpected %r" % text)


MISSING = object()


def kind_of(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return type(v).__name__


def equal(a, b):
    if kind_of(a) != kind_of(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return set(a) == set(b) and all(equal(a[k], b[k]) for k in a)
    return a == b


def select(obj, name):
    if not isinstance(obj, dict):
        raise CelError("cannot select %r from %s" % (name, kind_of(obj)))
    if name not in obj:
        raise CelError("no such key: %s" % name)
    if obj[name] is MISSING:
        raise CelError("%s failed to evaluate" % name)
    return obj[name]


def evaluate(e, env):
    op = e[0]
    if op == "lit":
        return e[1]
    if op == "id":
        if e[1] not in env:
            raise CelError("undeclared reference to %r" % e[1])
        return env[e[1]]
    if op == "list":
        return [evaluate(x, env) for x in e[1]]
    if op == "map":
        return {evaluate(k, env): evaluate(v, env) for k, v in e[1]}
    if op == "sel":
        return select(evaluate(e[1], env), e[2])
    if op == "idx":
        base, i = evaluate(e[1], env), evaluate(e[2], env)
        if isinstance(base, dict):
            if i not in base:
                raise CelError("no such key: %r" % (i,))
            return base[i]
        if isinstance(base, list) and isinstance(i, int) and 0 <= i < len(base):
            return base[i]
        raise CelError("index %r out of range" % (i,))
    if op == "not":
        v = evaluate(e[1], env)
        if not isinstance(v, bool):
            raise CelError("! of %s" % kind_of(v))
        return not v
    if op == "neg":
        return -evaluate(e[1], env)
    if op == "cond":
        c = evaluate(e[1], env)
        if not isinstance(c, bool):
            raise CelError("condition is %s" % kind_of(c))
        return evaluate(e[2] if c else e[3], env)
    if op == "bin":
        return binary(e[1], e[2], e[3], env)
    if op == "call":
        return call(e[1], e[2], e[3], env)
    raise CelError("cannot evaluate %r" % (op,))


def logic(opname, l, r, env):
    decisive = opname == "||"
    results = []
    for side in (l, r):
        try:
            v = evaluate(side, env)
            if not isinstance(v, bool):
                raise CelError("%s of %s" % (opname, kind_of(v)))
            results.append(v)
        except CelError as err:
            results.append(err)
    if any(v is decisive for v in results):
        return decisive
    for v in results:
        if isinstance(v, CelError):
            raise v
    return not decisive


def binary(opname, l, r, env):
    if opname in ("&&", "||"):
        return logic(opname, l, r, env)
    a, b = evaluate(l, env), evaluate(r, env)
    if opname == "==":
        return equal(a, b)
    if opname == "!=":
        return not equal(a, b)
    if opname == "in":
        if isinstance(b, dict):
            return a in b
        if isinstance(b, list):
            return any(equal(a, x) for x in b)
        raise CelError("in on %s" % kind_of(b))
    if kind_of(a) != kind_of(b) or kind_of(a) not in ("int", "str"):
        raise CelError("%s between %s and %s" % (opname, kind_of(a), kind_of(b)))
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[opname]


def call(name, target, args, env):
    if name == "has" and target is None:
        if len(args) != 1 or args[0][0] != "sel":
            raise CelError("has() needs a field selection")
        base = evaluate(args[0][1], env)
        if not isinstance(base, dict):
            raise CelError("has() on %s" % kind_of(base))
        return args[0][2] in base
    if name == "size" and target is None:
        return len(evaluate(args[0], env))
    if name in ("map", "filter", "all", "exists"):
        items = evaluate(target, env)
        if isinstance(items, dict):
            items = list(items)
        if not isinstance(items, list) or len(args) != 2 or args[0][0] != "id":
            raise CelError("%s() needs a list or map and (var, expr)" % name)
        var = args[0][1]

        def each(x):
            inner = dict(env)
            inner[var] = x
            return evaluate(args[1], inner)
        if name == "map":
            return [each(x) for x in items]
        if name == "filter":
            return [x for x in items if each(x) is True]
        if name == "all":
            return all(each(x) is True for x in items)
        return any(each(x) is True for x in items)
    if name == "startsWith":
        s, p = evaluate(target, env), evaluate(args[0], env)
        if not isinstance(s, str) or not isinstance(p, str):
            raise CelError("startsWith on %s" % kind_of(s))
        return s.startswith(p)
    raise CelError("unknown function %s" % name)


def run(src, env):
    return evaluate(Parser(src).parse(), env)


def admit(policy, request, obj, old):
    """(allowed, [messages of failed validations]) for one UPDATE under a
    ValidatingAdmissionPolicy spec (dict), as the API server would decide with
    failurePolicy Fail: unmatched requests are allowed."""
    spec = policy["spec"]
    env = {"request": request, "object": obj, "oldObject": old, "params": None}
    for c in spec.get("matchConditions", []):
        try:
            if run(c["expression"], env) is not True:
                return True, []
        except CelError as err:
            return False, ["matchCondition %s: %s" % (c["name"], err)]
    variables = {}
    env["variables"] = variables
    lazy = {v["name"]: v["expression"] for v in spec.get("variables", [])}
    # Variables may use earlier ones; evaluated in order, errors kept for use.
    for name, expr in lazy.items():
        try:
            variables[name] = run(expr, env)
        except CelError as err:
            variables[name] = MISSING
            variables.setdefault("__errors__", {})[name] = str(err)
    failed = []
    for v in spec.get("validations", []):
        try:
            ok = run(v["expression"], env)
        except CelError as err:
            ok = "error: %s" % err
        if ok is not True:
            failed.append("%s (%s)" % (v.get("message", v["expression"][:60]), ok))
    return not failed, failed
