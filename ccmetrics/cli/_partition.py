"""``ccmetrics partition GT_FILE OUT_FILE``: :func:`ccmetrics.voronoi_partition`, written with the GT's geometry."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK
from ._former import add_former, take_former


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``partition`` sub-command and its options."""
    pa = sub.add_parser(
        "partition",
        help="write the Voronoi regions of a GT image",
        description="Label every voxel with its nearest GT component (exact ties: lowest label) "
        "and write the map with the GT's geometry.",
    )
    pa.add_argument("gt_file")
    pa.add_argument("out_file")
    pa.add_argument(
        "--spacing",
        choices=("header", "voxel"),
        default="header",
        help="physical distances from the header (default) or index units",
    )
    add_former(
        pa,
        "--label",
        "--class",  # a label value, not an evaluated class
        type=int,
        default=None,
        help="use the voxels of this label of a label map as the GT mask",
    )
    pa.add_argument(
        "--sites",
        choices=("components", "labels"),
        default="components",
        help="sites: connected components (default) or the labels of an instance map",
    )
    pa.add_argument("--connectivity", type=int, default=None)

    return pa


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..engine.partition import voronoi_partition
    from ..formats.io import load_image, save_image

    take_former(args, "partition")
    gt = load_image(args.gt_file)
    mask = gt.array if args.label is None else (gt.array == args.label)
    if args.label is not None and not np.any(mask):
        raise ValueError(f"label {args.label} does not occur in {args.gt_file}")
    spacing = gt.spacing if args.spacing == "header" else None
    regions = voronoi_partition(mask, spacing=spacing, connectivity=args.connectivity, sites=args.sites)
    save_image(args.out_file, regions, like=gt)
    print(f"{int(regions.max())} regions written to {args.out_file}")
    return EXIT_OK
