"""Load batch-machine's openaddr/conform.py with stand-ins for GDAL and
Shapely, which its row functions never call, so that only the Python
standard library is needed."""
import importlib.util
import os
import sys
import types


def load_conform(bm):
    # Stand-ins for the modules conform.py imports but the row code never uses.
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
    shapely = types.ModuleType('shapely')
    for name in ('wkt', 'geometry'):
        m = types.ModuleType('shapely.' + name)
        sys.modules['shapely.' + name] = m
    sys.modules['shapely'] = shapely
    sys.modules['shapely.wkt'].loads = lambda s: None
    sys.modules['shapely.geometry'].mapping = lambda g: None
    pkg = types.ModuleType('openaddr')
    pkg.__path__ = []
    sys.modules['openaddr'] = pkg
    gj = types.ModuleType('openaddr.geojson')
    gj.stream_geojson = None
    sys.modules['openaddr.geojson'] = gj
    spec = importlib.util.spec_from_file_location('openaddr.conform', os.path.join(bm, 'openaddr', 'conform.py'))
    conform = importlib.util.module_from_spec(spec)
    sys.modules['openaddr.conform'] = conform
    spec.loader.exec_module(conform)
    return conform
