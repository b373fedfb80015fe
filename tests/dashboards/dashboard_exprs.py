#!/usr/bin/env python3
"""Panel expressions of a Grafana dashboard, with the dashboard's variables substituted.

usage: dashboard_exprs.py DASHBOARD.json list [--rate-interval 10s]
       dashboard_exprs.py DASHBOARD.json check RULES_OUT.yaml

list: prints one PromQL expression per line ("All" for every query variable).
check: checks the dashboard's structure (datasource variable, fleet/host/instance/interface/
antenna variables, a unit on every panel, the datasource variable on every panel and target,
no variable in an expression that the dashboard does not define; row panels are headers: a
title, no targets) and
writes the expressions as recording rules, so `promtool check rules` can parse them.
Exit 1 with one line per problem.
"""
import json
import sys

# fleet and host are the labels `rocecap fleet prometheus-sd` gives its targets (doc/fleet.md);
# with "All" (allValue .*) they also match series without them (one host, static targets).
REQUIRED_VARS = {"datasource": "datasource", "fleet": "query", "host": "query",
                 "instance": "query", "interface": "query", "antenna": "query"}


def expressions(dash, rate_interval="10s"):
    subst = {"$__rate_interval": rate_interval, "$__interval": rate_interval}
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            subst["$" + var["name"]] = var.get("allValue", ".*")
    out = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for key in sorted(subst, key=len, reverse=True):
                expr = expr.replace(key, subst[key])
            out.append((panel["title"], target["refId"], expr))
    return out


def problems(dash):
    found = []
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    for name, kind in REQUIRED_VARS.items():
        if variables.get(name, {}).get("type") != kind:
            found.append(f"templating: variable {name} of type {kind} missing")
    known = {"$__rate_interval"} | {"$" + name for name, v in variables.items()
                                     if v.get("type") == "query"}
    for panel in dash.get("panels", []):
        title = panel.get("title", "?")
        if panel.get("type") == "row":  # a row header: a title, no query of its own
            if panel.get("targets") or not panel.get("title"):
                found.append(f"row {title!r}: a row has a title and no targets")
            continue
        if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit"):
            found.append(f"panel {title!r}: no unit")
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            found.append(f"panel {title!r}: datasource is not ${{datasource}}")
        if not panel.get("targets"):
            found.append(f"panel {title!r}: no targets")
        for t in panel.get("targets", []):
            expr = t["expr"]
            for name in sorted(known, key=len, reverse=True):
                expr = expr.replace(name, "")
            if "$" in expr:
                found.append(f"panel {title!r} target {t['refId']}: unknown variable in {t['expr']}")
    return found


def main(argv):
    if len(argv) < 3 or argv[2] not in ("list", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        dash = json.load(f)
    if argv[2] == "list":
        rate = argv[4] if len(argv) > 4 and argv[3] == "--rate-interval" else "10s"
        for _, _, expr in expressions(dash, rate):
            print(expr)
        return 0
    found = problems(dash)
    for p in found:
        print(p)
    with open(argv[3], "w") as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, (title, ref, expr) in enumerate(expressions(dash)):
            f.write(f"      - record: dashboard:panel{i}:{ref}\n")
            f.write(f"        expr: {json.dumps(expr)}\n")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
