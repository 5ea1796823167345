"""Write a small DICOM example: a synthetic CT series, its GT as NIfTI and a prediction as DICOM SEG.

Two cases of a 64×56×20 CT at 0.8×0.8 mm in-plane and 2.5 mm between slices, written as one DICOM file
per slice (pydicom), slices stored head first (the positions go down the patient, as many scanners
write them). Each case has three spherical lesions in soft tissue. The GT is a NIfTI label map in the
axis order of converters such as ``dcm2niix`` (i along the DICOM columns, j along the rows, k along the
slices from the feet up, so the other way than the DICOM files and the SEG). The prediction is a binary
DICOM SEG written with highdicom from the CT series: the lesions shifted by up to a voxel, one lesion
missed, one false positive, and empty frames omitted (highdicom's default), so that the SEG holds only
the slices that contain a segment.

    python examples/make_dicom_example.py dicom_example
    # writes dicom_example/{ct/CASE/*.dcm, gt/CASE.nii.gz, pred/CASE.dcm}

:func:`write_ct_series` and :func:`write_seg` are also what ``tests/formats/test_dicom.py`` builds its cases
with. Needs the ``dicom`` extra (``pip install -e ".[dicom]"`` in a checkout: highdicom and pydicom).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ccmetrics.formats.io import Image, save_image

SHAPE = (64, 56, 20)  # columns, rows, slices
PIXEL_SPACING = (0.8, 0.8)  # mm between columns, between rows
SLICE_STEP = 2.5  # mm between slices


def ct_geometry(
    shape: Sequence[int] = SHAPE,
    pixel_spacing: Sequence[float] = PIXEL_SPACING,
    slice_step: float = SLICE_STEP,
    orientation: Sequence[float] = (1, 0, 0, 0, 1, 0),
    first_position: Sequence[float] = (-25.0, -20.0, 30.0),
    slice_direction: int = -1,
) -> np.ndarray:
    """The RAS affine of the array ``[column, row, slice]`` of an axial series (slices in file order).

    ``orientation`` is DICOM's ImageOrientationPatient (LPS unit vectors of a row, then of a column),
    ``first_position`` the first slice's ImagePositionPatient, and ``slice_direction`` -1 puts each next
    slice ``slice_step`` mm further along minus the slice normal (head first).
    """
    row_dir, col_dir = np.asarray(orientation[:3], float), np.asarray(orientation[3:], float)
    normal = np.cross(row_dir, col_dir)
    lps = np.eye(4)
    lps[:3, 0] = row_dir * pixel_spacing[0]  # along a row: the column index grows
    lps[:3, 1] = col_dir * pixel_spacing[1]
    lps[:3, 2] = normal * slice_step * slice_direction
    lps[:3, 3] = first_position
    return np.diag([-1.0, -1.0, 1.0, 1.0]) @ lps  # LPS -> RAS


def write_ct_series(folder: Path, volume: np.ndarray, affine: np.ndarray, uid_seed: int = 0) -> list:
    """Write ``volume[column, row, slice]`` (HU, RAS ``affine``) as a CT series of one file per slice.

    Returns the pydicom datasets (what highdicom's SEG writer takes as source images).
    """
    import pydicom
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

    folder.mkdir(parents=True, exist_ok=True)
    lps = np.diag([-1.0, -1.0, 1.0, 1.0]) @ affine
    spacing = np.linalg.norm(lps[:3, :3], axis=0)
    row_dir, col_dir = lps[:3, 0] / spacing[0], lps[:3, 1] / spacing[1]
    study, series, frame = (generate_uid(entropy_srcs=[f"{uid_seed}-{n}"]) for n in ("study", "series", "frame"))
    datasets = []
    for k in range(volume.shape[2]):
        ds = pydicom.Dataset()
        ds.file_meta = FileMetaDataset()
        ds.file_meta.MediaStorageSOPClassUID = CTImageStorage
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds.SOPClassUID = CTImageStorage
        ds.SOPInstanceUID = generate_uid(entropy_srcs=[f"{uid_seed}-slice-{k}"])
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = study, series, frame
        ds.PatientID, ds.PatientName, ds.PatientSex, ds.PatientBirthDate = f"P{uid_seed:03d}", "Example^Case", "O", ""
        ds.StudyDate, ds.StudyTime, ds.StudyID, ds.AccessionNumber, ds.ReferringPhysicianName = "", "", "1", "", ""
        ds.Modality, ds.SeriesNumber, ds.InstanceNumber, ds.Manufacturer = "CT", 1, k + 1, "ccmetrics example"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        ds.ImagePositionPatient = [float(v) for v in lps[:3, 3] + k * lps[:3, 2]]
        ds.ImageOrientationPatient = [float(v) for v in (*row_dir, *col_dir)]
        ds.PixelSpacing = [float(spacing[1]), float(spacing[0])]  # DICOM: between rows, then between columns
        ds.SliceThickness = float(spacing[2])
        ds.Rows, ds.Columns = volume.shape[1], volume.shape[0]
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleIntercept, ds.RescaleSlope = 0, 1
        ds.PixelData = np.ascontiguousarray(volume[:, :, k].T.astype("<i2")).tobytes()  # rows of columns
        pydicom.dcmwrite(folder / f"slice_{k:03d}.dcm", ds, enforce_file_format=True)
        datasets.append(ds)
    return datasets


def write_seg(
    path: Path,
    labels: np.ndarray,
    source: list,
    names: dict[int, str],
    *,
    fractional: bool = False,
    omit_empty_frames: bool = True,
) -> None:
    """Write the label map ``labels[column, row, slice]`` (on ``source``'s grid) as a DICOM SEG, one segment
    per label of ``names``; ``fractional``: a FRACTIONAL SEG (each voxel 0 or 1 stored as a fraction)."""
    import highdicom as hd
    from pydicom.sr.codedict import codes

    segments = [
        hd.seg.SegmentDescription(
            segment_number=number,
            segment_label=name,
            segmented_property_category=codes.SCT.MorphologicallyAbnormalStructure,
            segmented_property_type=codes.SCT.Neoplasm,
            algorithm_type=hd.seg.SegmentAlgorithmTypeValues.AUTOMATIC,
            algorithm_identification=hd.AlgorithmIdentificationSequence(
                name="example", version="1", family=codes.DCM.ArtificialIntelligence
            ),
        )
        for number, name in sorted(names.items())
    ]
    frames = np.moveaxis(labels, (2, 1, 0), (0, 1, 2))  # [slice, row, column], highdicom's frame order
    pixels = np.stack([frames == n for n in sorted(names)], axis=-1).astype(np.float32 if fractional else np.uint8)
    seg = hd.seg.Segmentation(
        source_images=source,
        pixel_array=pixels,
        segmentation_type=hd.seg.SegmentationTypeValues.FRACTIONAL if fractional else "BINARY",
        segment_descriptions=segments,
        series_instance_uid=hd.UID(),
        series_number=100,
        sop_instance_uid=hd.UID(),
        instance_number=1,
        manufacturer="ccmetrics example",
        manufacturer_model_name="example",
        software_versions="1",
        device_serial_number="1",
        omit_empty_frames=omit_empty_frames,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    seg.save_as(path)


def balls(centres: Sequence[Sequence[float]], radii: Sequence[float], shape: Sequence[int] = SHAPE) -> np.ndarray:
    """A label map with label 1 in each ball (radius in voxels of the in-plane grid; slices 3.125× thicker)."""
    grid = np.indices(shape).astype(float)
    grid[2] *= SLICE_STEP / PIXEL_SPACING[0]
    out = np.zeros(shape, np.uint8)
    for c, r in zip(centres, radii):
        c = np.array(c, float) * [1, 1, SLICE_STEP / PIXEL_SPACING[0]]
        out[((grid - c[:, None, None, None]) ** 2).sum(0) < r**2] = 1
    return out


def flip_slices(array: np.ndarray, affine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same image with its slice axis reversed: the array and its affine (the voxels stay where they are)."""
    flip = np.eye(4)
    flip[2, 2], flip[2, 3] = -1.0, array.shape[2] - 1
    return np.ascontiguousarray(array[:, :, ::-1]), affine @ flip


def make_case(folder: Path, case: str, seed: int) -> None:
    """Write one case's CT series, NIfTI GT and SEG prediction under ``folder``."""
    rng = np.random.default_rng(seed)
    centres = [(18, 18, 8), (44, 30, 10), (30, 42, 12)]
    gt = balls(centres, [6, 5, 3.5])
    shift = rng.integers(-1, 2, 3)
    pred = np.roll(balls(centres[:2], [6, 5]), shift, axis=(0, 1, 2))  # the third lesion is missed
    pred |= balls([(54, 10, 16)], [3])  # a false positive
    ct = np.where(balls([(32, 28, 10)], [26]) > 0, 40, -1000).astype(np.int16)
    ct[gt > 0] = 70
    affine = ct_geometry()
    source = write_ct_series(folder / "ct" / case, ct, affine, uid_seed=seed)
    feet_first, flipped = flip_slices(gt, affine)  # the NIfTI from the feet up, as converters sort the slices
    (folder / "gt").mkdir(parents=True, exist_ok=True)
    save_image(
        folder / "gt" / f"{case}.nii.gz", feet_first, like=Image(feet_first, PIXEL_SPACING + (SLICE_STEP,), flipped)
    )
    write_seg(folder / "pred" / f"{case}.dcm", pred, source, {1: "lesion"})


def _check_extra() -> None:
    """The ``dicom`` extra's packages are there, else a message that names the install command."""
    import importlib.util

    missing = [name for name in ("pydicom", "highdicom") if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(
            f"make_dicom_example.py needs {' and '.join(missing)}: install the dicom extra, "
            'pip install -e ".[dicom]" (or pip install highdicom pydicom; Python >= 3.10)'
        )


def main(out: str) -> None:
    _check_extra()
    folder = Path(out)
    for seed, case in enumerate(("case_001", "case_002")):
        make_case(folder, case, seed)
    print(f"wrote 2 cases under {folder}: ct/, gt/ (NIfTI) and pred/ (DICOM SEG)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dicom_example")
