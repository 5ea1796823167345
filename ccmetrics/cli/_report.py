"""``ccmetrics report RESULT_DIR``: :func:`ccmetrics.report.write_report`, one self-contained HTML page."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .._files import refuse_dangling_link
from ._common import EXIT_OK, EXIT_USAGE, _name_list, _say
from ._former import add_former, spelling_given, take_former


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``report`` sub-command and its options."""
    re_ = sub.add_parser(
        "report",
        help="write a per-lesion HTML report of a `ccmetrics evaluate` folder",
        description="One self-contained HTML page: the summary, the cases ranked by standard - CC "
        "difference, every lesion and false positive with thumbnails, sortable and "
        "filterable tables, and per drawn case a viewer (a coronal and a sagittal MIP and three planes through a "
        "cursor, every lesion coloured by its outcome). Opens from disk, needs no server or network.",
    )
    re_.add_argument("result_dir", help="output folder of `ccmetrics evaluate`")
    add_former(
        re_,
        "--html",
        "--out",
        default=None,
        metavar="FILE",
        help="HTML file to write (default: RESULT_DIR/report.html)",
    )
    re_.add_argument(
        "--max-cases",
        type=int,
        default=20,
        metavar="N",
        help="draw thumbnails for the N cases with the worst CC score (default 20; every case and "
        "lesion is listed in the tables whatever N)",
    )
    re_.add_argument(
        "--image-root",
        default=None,
        metavar="DIR",
        help="folder the relative GT and prediction paths of per_case.csv start from (default: the "
        "current folder, then the result folder and its parent)",
    )
    re_.add_argument("--title", default=None, help="page title")
    re_.add_argument(
        "--no-viewer",
        dest="viewer",
        action="store_false",
        help="leave out the viewer of each drawn case (MIP and planes; at most about 2 MB a case)",
    )
    re_.add_argument(
        "--viewer-data",
        choices=("auto", "inline", "folder"),
        default="auto",
        help="where the viewers' data go: in the page (inline), or in a folder beside it (folder: "
        "REPORT_files/, one script a case, loaded when its viewer opens, also from a page opened as a file; keep "
        "the folder with the page); auto (default): inline up to 50 MB, beside the page beyond",
    )
    re_.add_argument(
        "--images",
        default=None,
        metavar="IMAGE_DIR",
        help="draw the thumbnails on the scans of this folder: CASE_0000.nii.gz, CASE_0001.nii.gz, ... "
        "(nnU-Net's naming, one row per channel, e.g. CT and PET) or CASE.nii.gz; a case whose scan is "
        "missing or lies on another voxel grid than its GT is drawn on the empty background, with a note",
    )
    re_.add_argument(
        "--channel-names",
        type=_name_list,
        default=None,
        metavar="NAMES",
        help="names of the channels of --images in the order of their numbers, e.g. CT,PET (default: 0000, 0001)",
    )
    re_.add_argument(
        "--window",
        action="append",
        default=None,
        metavar="[CHANNEL=]WINDOW",
        help="grey scale of the scans: auto (default: a channel with values below -500 is a CT, shown at "
        "level 40 / width 400 HU; any other from 0 to the crop's maximum), ct, a CT preset (soft, lung, bone, "
        "brain), range, LEVEL/WIDTH such as --window=-600/1500, or LOW:HIGH such as 0:10; CHANNEL= (a name, any "
        "case; a code such as 0001; or pet or ct, every channel of that kind: --window pet=0:10 --window ct=lung) "
        "sets those channels' scale, in the thumbnails and the viewer; repeatable. The viewer uses one fixed "
        "scale for every case: the one asked for, else SUV 0:10 for a PET and the soft-tissue window for a CT",
    )
    add_former(
        re_,
        "--max-image-memory",
        "--max-memory",
        default=None,
        metavar="SIZE",
        help="most memory reading one channel of --images may take, e.g. 8G, judged from its header before it is "
        "read; a channel over it is left out with a note (default: 80%% of the available memory)",
    )
    return re_


def run(args: argparse.Namespace) -> int:
    """``ccmetrics report``: every message in the command line's terms (:func:`ccmetrics._words.command_line`)."""
    from .._words import command_line

    with command_line():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ..report import write_report
    from ..results.tables import drawn_by_ccmetrics

    take_former(args, "report")
    memory_flag = spelling_given(args, "max_image_memory", "--max-image-memory")
    if args.max_cases < 0:
        raise ValueError(f"--max-cases must be 0 or more, got {args.max_cases}")
    if args.images is not None and not Path(args.images).is_dir():
        _say(
            f"ccmetrics report: error: --images {args.images}: no such folder; give the folder that holds the "
            "scans, one file per case and channel (CASE_0000.nii.gz, CASE_0001.nii.gz, ... or CASE.nii.gz)"
        )
        return EXIT_USAGE
    if (args.channel_names or args.window or args.max_image_memory) and args.images is None:
        _say(f"ccmetrics report: error: --channel-names, --window and {memory_flag} go with --images IMAGE_DIR")
        return EXIT_USAGE
    window: dict[str, str] = {}
    for given in args.window or []:
        channel, _, spec = given.rpartition("=")
        window[channel or "*"] = spec
    out = args.html if args.html is not None else Path(args.result_dir) / "report.html"
    refuse_dangling_link(Path(out).parent, "--html")
    if args.html is None and os.path.lexists(out) and not drawn_by_ccmetrics(Path(out)):
        _say(
            f"ccmetrics report: error: {out} exists and was not drawn by ccmetrics report: ccmetrics replaces no file "
            "of yours; move it away, or write the report elsewhere with --html FILE (formerly --out FILE)"
        )
        return EXIT_USAGE
    info = write_report(
        args.result_dir,
        out,
        max_cases=args.max_cases,
        image_root=args.image_root,
        title=args.title,
        images=args.images,
        channel_names=args.channel_names,
        window=window or None,
        max_image_memory=args.max_image_memory,
        with_viewer=args.viewer,
        viewer_data=args.viewer_data,
    )
    print(info)
    return EXIT_OK
