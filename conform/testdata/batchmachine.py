"""Write batchmachine.json.gz: what batch-machine's own conform code makes of
OpenAddresses' acceptance tests and regexp patterns, for TestCatalogAcceptance and
TestCatalogRegexps.

    python3 batchmachine.py BATCH_MACHINE_CHECKOUT OPENADDRESSES_CHECKOUT | gzip -9 -n > batchmachine.json.gz

It loads openaddr/conform.py with stand-ins for GDAL and Shapely, which the
row functions never call, so only the Python standard library is needed.
"""
import copy
import glob
import json
import os
import subprocess
import sys

bm, oa = sys.argv[1], sys.argv[2]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmload import load_conform  # noqa: E402

conform = load_conform(bm)

SCHEMAS = {
    'addresses': conform.ADDRESSES_SCHEMA,
    'buildings': conform.BUILDINGS_SCHEMA,
    'parcels': conform.PARCELS_SCHEMA,
    'centerlines': conform.CENTERLINES_SCHEMA,
}


class SourceConfig:
    def __init__(self, layer, data_source):
        self.layer = layer
        self.data_source = data_source
        self.SCHEMA = SCHEMAS[layer]


def run(layer, conform_obj, inputs):
    """The columns batch-machine maps inputs to, without the hash, or the
    name of the exception it raises."""
    sc = SourceConfig(layer, {'conform': copy.deepcopy(conform_obj), 'fingerprint': '0'})
    row = dict(inputs)
    row[conform.GEOM_FIELDNAME] = ''
    try:
        out = conform.row_transform_and_convert(sc, row)['properties']
    except Exception as e:
        return {'error': type(e).__name__}
    out.pop('hash', None)
    return {'output': {k: ('' if v is None else v) for k, v in out.items()}}


def git_head(path):
    return subprocess.run(['git', '-C', path, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()


# Values regexp patterns are tried on besides the inputs of the catalog's
# tests: address-like strings with the shapes the catalog's patterns cut.
SAMPLES = [
    '', ' ', '123 MAIN ST', '123 N MAIN ST APT 4', '123-1/2 Main Street', '12B Elm Ave #3',
    'MAIN ST', '4500 S 700 E UNIT 12', '  77  OAK  DR  ', '1 1/2 RIVER RD', 'PO BOX 12',
    '10-12 Queens Blvd', 'Rue de la Paix 12', 'Hauptstraße 5a', 'N123W45678 County Rd',
    '123 MAIN ST, SPRINGFIELD, IL 62701', '٣٤ شارع', 'Calle 5 #10-20', '0', '12.0', 'ONE\tTWO\nTHREE',
]


def regexp_cases(path, layer, attr, f, test_inputs):
    field = f.get('field')
    values = list(SAMPLES)
    for inputs in test_inputs:
        v = inputs.get(field)
        if isinstance(v, str) and v not in values:
            values.append(v)
    cases = []
    for v in values:
        r = run(layer, {attr: f}, {field: v})
        # [value, column's result] or [value, None, exception's name]
        cases.append([v, r['output'][attr]] if 'output' in r else [v, None, r['error']])
    return cases


# Values that probe where Python's str and re semantics are easy to get
# wrong: Unicode digits, case folding under IGNORECASE, whitespace that
# str.isspace and \s know, numbers as the CSV extract prints them.
TRICKY = [
    '12 MAIN ST', '12\x1cMAIN ST', '12\u00a0MAIN ST', '12\u2003MAIN ST', '12\u200bMAIN ST', '\x1f12 MAIN ST\x1f',
    '\u0663\u0664 MAIN ST', '\uff11\uff12 MAIN ST', '12\u017f MAIN ST', '12\u212a MAIN ST', '12\u0131 MAIN ST',
    '12-\u0130 MAIN ST', '12\u00b2 MAIN ST', '12 1/2 MAIN ST', '12-1/2 MAIN ST', '12 \u00bd MAIN ST', '69-15 51ST AVE',
    '12A MAIN ST', '12-a MAIN ST', '12ab MAIN ST', '12 MAIN ST UNIT 3', '12 MAIN ST apt. 3', '12 MAIN ST #3',
    '12 MAIN ST\tSTE\t4', '12 MAIN ST\nLOT 3', 'MAIN ST LOT', 'MAIN ST #', '12 MAIN ST \u0131\u0307', '  ', '',
    '12.0', ' 12.0 ', '12.5', '1.0.0', 'N\u00b0 12', '\u00c9COLE 12 RUE', 'stra\u00dfe 1', 'STRASSE 1',
]
FUNCTION_CONFORMS = [
    ('addresses', {'number': {'function': 'prefixed_number', 'field': 'A'}, 'street': {'function': 'postfixed_street', 'field': 'A'}, 'unit': {'function': 'postfixed_unit', 'field': 'A'}}),
    ('addresses', {'street': {'function': 'postfixed_street', 'field': 'A', 'may_contain_units': True}, 'number': 'A', 'unit': ['A', 'B']}),
    ('addresses', {'number': {'function': 'format', 'fields': ['A', 'B'], 'format': '$1-$2'}, 'street': {'function': 'join', 'fields': ['B', 'A'], 'separator': '/'}, 'city': {'function': 'first_non_empty', 'fields': ['A', 'B']}}),
    ('addresses', {'street': {'function': 'remove_prefix', 'field': 'A', 'field_to_remove': 'B'}, 'unit': {'function': 'remove_postfix', 'field': 'A', 'field_to_remove': 'B'}, 'postcode': 'B'}),
    ('addresses', {'number': {'function': 'regexp', 'field': 'A', 'pattern': r'^(\d+)\s*(\w?)', 'replace': r'$1$2'}, 'street': {'function': 'regexp', 'field': 'A', 'pattern': r'(?i)(?<=\s)(st|ave)\b'}, 'city': {'function': 'regexp', 'field': 'A', 'pattern': r'\s+', 'replace': ' '}}),
    ('centerlines', {'speed': {'function': 'mph_to_kph', 'field': 'A'}, 'name': {'function': 'map', 'field': 'A', 'mapping': {'12': 'twelve', '': 'empty'}, 'else': 'other'}}),
    ('addresses', {'number': {'function': 'chain', 'variable': 'v', 'functions': [{'function': 'prefixed_number', 'field': 'A'}, {'function': 'format', 'fields': ['v', 'B'], 'format': '$1$2'}]}, 'street': {'function': 'chain', 'functions': [{'function': 'postfixed_street', 'field': 'A'}, {'function': 'regexp', 'field': 'street', 'pattern': r'\bST\b', 'replace': 'STREET'}]}}),
]


def function_cases():
    cases = []
    for layer, c in FUNCTION_CONFORMS:
        results = []
        for a in TRICKY:
            for b in ('', '12', ' ST', 'MAIN ST'):
                r = run(layer, c, {'A': a, 'B': b})
                results.append([a, b, r.get('output'), r.get('error')])
        cases.append({'layer': layer, 'conform': c, 'results': results})
    return cases


def main():
    out = {
        'batch_machine_commit': git_head(bm),
        'openaddresses_commit': git_head(oa),
        'python': sys.version.split()[0],
        'acceptance': [],
        'regexps': [],
        'functions': function_cases(),
    }
    seen = set()
    for path in sorted(glob.glob(os.path.join(oa, 'sources', '**', '*.json'), recursive=True)):
        src = json.load(open(path))
        rel = os.path.relpath(path, oa)
        for layer, items in sorted((src.get('layers') or {}).items()):
            if layer not in SCHEMAS:
                continue
            for item in items:
                c = item.get('conform') or {}
                tests = (item.get('test') or {}).get('acceptance-tests') or []
                for i, t in enumerate(tests):
                    out['acceptance'].append({
                        'source': rel, 'layer': layer, 'conform': c, 'index': i,
                        'description': t.get('description', ''), 'inputs': t['inputs'],
                        'expected': t['expected'], **run(layer, c, t['inputs']),
                    })
                test_inputs = [t['inputs'] for t in tests]

                def walk(attr, f):
                    if not isinstance(f, dict):
                        return
                    if f.get('function') == 'regexp':
                        key = json.dumps([layer, attr, f], sort_keys=True)
                        if key not in seen:
                            seen.add(key)
                            out['regexps'].append({
                                'source': rel, 'layer': layer, 'column': attr, 'function': f,
                                'cases': regexp_cases(path, layer, attr, f, test_inputs),
                            })
                    for g in f.get('functions') or []:
                        walk(attr, g)

                for attr, f in c.items():
                    if attr in SCHEMAS[layer]:
                        walk(attr, f)
    # Key order matters: batch-machine applies a conform's keys in order.
    json.dump(out, sys.stdout, ensure_ascii=False, separators=(',', ':'))
    sys.stdout.write('\n')


main()
