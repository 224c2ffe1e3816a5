"""Write bmtests.json: every call batch-machine's own conform tests
(openaddr/tests/conform.py) make to its row functions, with the row before
and after, recorded while those tests run and pass.

    python3 bmtests.py BATCH_MACHINE_CHECKOUT > bmtests.json

The tests run are the function cases: TestConformTransforms (less the
reprojection test, which needs GDAL), TestAccuracyMap, TestConformTests and
TestConformMisc.test_convert_regexp_replace. GDAL is replaced by a stand-in
the row functions never call, Shapely by a reader of WKT points.
"""
import copy
import importlib.util
import json
import os
import subprocess
import sys
import types
import unittest

bm = sys.argv[1]

osgeo = types.ModuleType('osgeo')
osgeo.__version__ = '3.0.0'
for name in ('ogr', 'osr', 'gdal'):
    m = types.ModuleType('osgeo.' + name)
    setattr(osgeo, name, m)
    sys.modules['osgeo.' + name] = m
osgeo.ogr.UseExceptions = lambda: None
for k in ('CE_None', 'CE_Debug', 'CE_Warning', 'CE_Failure', 'CE_Fatal'):
    setattr(osgeo.gdal, k, k)
osgeo.gdal.PushErrorHandler = lambda f: None
sys.modules['osgeo'] = osgeo
for name in ('shapely', 'shapely.wkt', 'shapely.geometry'):
    sys.modules[name] = types.ModuleType(name)


def wkt_point(s):
    # The tests' geometries are all points; Shapely would give this mapping.
    x, y = s.strip()[len('POINT'):].strip(' ()').split()
    return (float(x), float(y))


sys.modules['shapely.wkt'].loads = wkt_point
sys.modules['shapely.geometry'].mapping = lambda p: {'type': 'Point', 'coordinates': p}


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


pkg = types.ModuleType('openaddr')
pkg.__path__ = [os.path.join(bm, 'openaddr')]
sys.modules['openaddr'] = pkg
gj = types.ModuleType('openaddr.geojson')
gj.stream_geojson = None
sys.modules['openaddr.geojson'] = gj
conform = load('openaddr.conform', os.path.join(bm, 'openaddr', 'conform.py'))


class SourceConfig:
    """openaddr.SourceConfig, without the imports of the rest of the package."""
    def __init__(self, source, layer, layersource):
        self.layer = layer
        self.data_source = None
        for ds in source['layers'][layer]:
            if ds.get('name', None) == layersource:
                self.data_source = ds
        self.SCHEMA = {
            'addresses': conform.ADDRESSES_SCHEMA, 'buildings': conform.BUILDINGS_SCHEMA,
            'parcels': conform.PARCELS_SCHEMA, 'centerlines': conform.CENTERLINES_SCHEMA,
        }[layer]


pkg.SourceConfig = SourceConfig
tpkg = types.ModuleType('openaddr.tests')
tpkg.__path__ = [os.path.join(bm, 'openaddr', 'tests')]
sys.modules['openaddr.tests'] = tpkg
tests = load('openaddr.tests.conform', os.path.join(bm, 'openaddr', 'tests', 'conform.py'))

calls = []
current = [None]
depth = [0]


def layer_of(sc):
    return getattr(sc, 'layer', 'addresses')


def recorder(name, fn):
    def wrapped(*args):
        if depth[0] > 0:
            return fn(*args)
        depth[0] += 1
        try:
            before = copy.deepcopy(args)
            try:
                result = fn(*args)
            except Exception as e:
                calls.append({'test': current[0], 'call': name, 'args': jsonable(before), 'error': type(e).__name__})
                raise
            rec = {'test': current[0], 'call': name, 'args': jsonable(before), 'result': jsonable(copy.deepcopy(result))}
            if name in ('row_fxn_chain', 'row_merge') or name.startswith('row_fxn_'):
                sc = before[0]
                rec['layer'] = layer_of(sc)
            if name == 'row_merge':
                rec['fields'] = before[0].data_source['conform'][before[2]]
            calls.append(rec)
            return result
        finally:
            depth[0] -= 1
    return wrapped


def jsonable(v):
    if isinstance(v, SourceConfig):
        return {'layer': v.layer, 'conform': v.data_source.get('conform'), 'test': v.data_source.get('test')}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    return v


names = [n for n in dir(tests) if n.startswith('row_') or n in ('convert_regexp_replace', 'check_source_tests')]
for n in names:
    setattr(tests, n, recorder(n, getattr(tests, n)))

selected = []
for cls in (tests.TestConformTransforms, tests.TestAccuracyMap, tests.TestConformTests):
    for m in unittest.TestLoader().getTestCaseNames(cls):
        if m != 'test_row_extract_and_reproject':
            selected.append(cls(m))
selected.append(tests.TestConformMisc('test_convert_regexp_replace'))


class Result(unittest.TextTestResult):
    def startTest(self, test):
        current[0] = test.id().split('.', 3)[-1]
        super().startTest(test)


os.chdir(os.path.join(bm, 'openaddr', 'tests'))
runner = unittest.TextTestRunner(stream=sys.stderr, resultclass=Result, verbosity=0)
res = runner.run(unittest.TestSuite(selected))
if not res.wasSuccessful():
    sys.exit('batch-machine tests failed')
commit = subprocess.run(['git', '-C', bm, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()
json.dump({'batch_machine_commit': commit, 'python': sys.version.split()[0], 'tests': len(selected), 'calls': calls},
          sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write('\n')
